"""Benchmarks: what each one is (one file per family), where its items come from (`sources/`),
how it is selected, loaded and checked.

The images the benchmarks generate are served under their own image root: `synthetic:<scene
id>` (lexsem's rendered scenes, `sources/synthetic_images.py`) is registered with every image
store here, lazily (nothing is imported until an image is read).
"""

from lexsem.images.providers import register_provider

register_provider("synthetic", "lexsem.benchmarks.sources.synthetic_images:synthetic_image_bytes")
