"""The bag readers: text formats, ``.npz`` arrays, bag folders, ``.npy``/``.h5`` instance files."""
