"""Reading data: the dataset specs, the data directory, fetching and the cache, and the readers."""
