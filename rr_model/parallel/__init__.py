"""What a run asks of its devices: parallelism and memory.

`sharding` lays a model out with FSDP2 across processes and `out_of_memory` lets every rank know when one
ran out; `memory` plans a run's memory before it starts and refuses one that cannot fit; `hardware` and
`flops` say what a device offers and what a token costs (the dry run's minutes, the trainer's MFU).
"""
