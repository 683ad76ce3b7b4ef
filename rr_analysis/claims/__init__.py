"""The paper's claims audited: the claims as records (`reported`, from `claims.toml`), each number judged
(`verdicts`), and the audit table (`audit.claims`).
"""
