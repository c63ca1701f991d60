"""Hard-negative fine-tuning of CLIP models (BiVLC, §5; NegCLIP), with lexsem's own evaluation
as the judge: losses, training data and the leakage guard, the training loop, checkpoints."""
