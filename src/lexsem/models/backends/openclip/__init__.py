"""The `openclip:` backend (open_clip models), one module per idea: `spec` (the NAME forms),
`custom_arch` (model config files), `install` (importing open_clip), `pretrained` (open_clip's
registry, read without weights) and `facts` (its memo on disk), `trained_activation` (what each
pretrained tag was trained with: a table of facts), `quickgelu` (the activation policy),
`source` (where the weights are, what identifies them), `checkpoints` (training checkpoints),
`trim` (causal text towers run to their longest text) and `encoder` (`OpenClipEncoder`, the
backend class)."""
