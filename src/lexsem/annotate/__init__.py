"""`lexsem annotate`: human studies and what is made of their answers (docs/human-studies.md)."""
