"""What every generative-VLM backend shares: how a question and an answer are laid out for one
model family (`layout`), and the teacher-forced log-probability of a continuation after a
prompt and an image (`teacher`), with the image and the prompt's shared part computed once for
every candidate (`prefix`)."""
