"""The data pipeline of a run: a corpus (`corpus`) tokenized (`tokenizers`) into a token stream cached on
disk (`token_cache`), and the offline synthetic story corpus (`synthetic`). Torch-free.
"""
