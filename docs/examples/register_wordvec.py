"""Make the `wordvec:` backend known: in lexsem itself this is one line in
`src/lexsem/models/factory.py`; from your own code, `register_backend`."""

from lexsem.models.factory import register_backend

register_backend("wordvec", "wordvec:WordVectorEncoder")  # "module:attr", imported when used
