"""An episode's token budget, all its turns together: the default of a run's `max_completion_length` and of an
evaluation's `max_tokens`, one number so that an evaluation of a run's model measures what the run trained.

Room for several calls and the environment's answers, as a warm start teaches them (whole episodes of up to 1,024
tokens): OpenEnv's maze and chess answer each move with ~300 tokens, so at 384 most episodes ended after one call
(maze 0.75 to 0.92 accepted calls per episode, chess 0.83 to 1.0; at 1,024: 1.58 to 1.92, 1.5 to 2.25)."""

DEFAULT_MAX_TOKENS = 1024
