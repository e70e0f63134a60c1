"""The trainer and evaluator subprocesses, the only processes that import torch and TRL: the dataset, the one place a
version becomes an environment class, TRL's config, the reward and callback that record everything, evals during
training, the concurrent tool dispatch."""
