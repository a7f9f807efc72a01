"""The bag readers: text formats, ``.npz`` arrays, bag folders, ``.npy``/``.h5`` instance files, and the slide
feature folders CLAM and TRIDENT write."""
