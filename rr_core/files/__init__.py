"""The file mechanisms every reader and writer in rr shares, one module each.

- `reading`: a regular file of bounded size (`read_regular`), JSON lines that survive a torn line, TOML;
- `synced`: a write that reaches the disk, and a folder's fsync;
- `replacing`: a file or folder published whole (`atomic_write`, `create_new`, `atomic_dir`, `create_dir`),
  whose killed writers' temporary files the next write removes;
- `appending`: an append to a locked file, whole or not at all (`append_whole`);
- `locks`: `locked` (wait for a shared file) and `claim` (refuse a run another process is making);
- `checksums`: what rr reads back is what it wrote (`SHA256SUMS`, a zip archive's CRC-32s).
"""
