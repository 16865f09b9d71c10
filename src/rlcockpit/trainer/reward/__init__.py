"""The reward room: scoring responses: the built-in reward functions and reward managers by name (``rewards``),
verl's ``default_compute_score`` by data source (``score``) and its geometry-answer grader (``geo3k``)."""
