"""Writing runs: the tracker, studies, trials, results, figures, the model, inputs, the registry."""
