"""Sampling: the sampler chain, grammars, logit bias, token probabilities, the reasoning budget."""
