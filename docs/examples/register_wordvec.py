"""Make the `wordvec:` backend known: in lexsem itself this is one line in
`src/lexsem/models/backend_registry.py`; from your own code, `register_backend`."""

from lexsem.models.backend_registry import register_backend

register_backend("wordvec", "wordvec:WordVectorEncoder")  # "module:attr", imported when used
