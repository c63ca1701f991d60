"""`lexsem annotate`: human studies, their agreement, human runs and fold-back (docs/human-studies.md)."""
