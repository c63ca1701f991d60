"""What tests build and share: tiny models, fake servers, images, parquet fixtures, comparisons.

Test modules import from here (`from builders.numeric import ...`), never from one another
(tests/test_suite_layout.py checks it). A builder module imports optional backends (torch,
transformers, open_clip) inside the functions that need them, so importing it never fails
when a backend is missing: the test that calls it is marked (`pytest.mark.torch`) and
tests/conftest.py skips it locally or fails it in CI.
"""
