"""Serving curves of language-model generation (exp.phase=generate, in process or at an
endpoint): curves by load and their knees (curves), their tables (tables), their charts
(chart), and a load search drawn as a curve (search)."""
