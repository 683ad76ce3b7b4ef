"""Reaching the Hugging Face hub, or knowing at once that it cannot be reached: the one gate every download
rr asks for goes through (GPT-2's tokenizer, TinyStories and `hf:NAME` corpora, lm-evaluation-harness's task
datasets). Torch-free.

Offline, the hub's client retries each request with growing waits before it gives up (23-31 s for one
command), and only then does rr learn that nothing could be had. Instead `from_hub` decides first: the
hub's offline mode (HF_HUB_OFFLINE=1, or HF_DATASETS_OFFLINE / TRANSFORMERS_OFFLINE) is taken as said, and
otherwise one TCP connection to the hub's host (or the HTTPS proxy a request would go through) is tried,
for at most `PROBE_SECONDS`. When it fails the process works as HF_HUB_OFFLINE=1 makes it: what the Hugging
Face cache holds still loads, by the libraries' own loading code, and what it does not hold is one
`DataUnavailable` naming the setting and the local copies that serve instead.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import socket
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from rr_core.errors import RRError

__all__ = [
    "DataUnavailable",
    "PROBE_SECONDS",
    "from_hub",
    "hub_unreachable",
    "in_cache",
    "not_cached",
    "probe",
]

PROBE_SECONDS = 1.5  # one TCP handshake, name lookup included: a reachable hub answers in well under this
_OFFLINE_SETTINGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


class DataUnavailable(RRError):
    """The hub, or a dataset or tokenizer on it, cannot be reached and nothing usable is cached."""


def not_cached(what: str, why: str, instead: str) -> DataUnavailable:
    """The one line for `what` missing from the cache while the hub cannot be used (`why`, a clause from
    `hub_unreachable`), followed by what serves `instead`."""
    return DataUnavailable(
        f"cannot load {what}: not in this machine's Hugging Face cache, and {why}. {instead}"
    )


def _offline_setting() -> str | None:
    """The setting that puts the hub's client in its offline mode ("HF_HUB_OFFLINE=1"), if one is set: in
    the environment now, or as the hub's client read it when it was imported."""
    for name in _OFFLINE_SETTINGS:
        if os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{name}={os.environ[name]}"
    hub = sys.modules.get("huggingface_hub.constants")
    return "HF_HUB_OFFLINE=1" if hub is not None and hub.HF_HUB_OFFLINE else None


def _hub_address() -> tuple[str, int]:
    """Where a hub request first connects: the HTTPS proxy that serves the hub's host, else the host."""
    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    proxy = urllib.request.getproxies().get("https")
    if proxy and not urllib.request.proxy_bypass(url.hostname or ""):
        url = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


def _connects(host: str, port: int, seconds: float) -> str | None:
    """None when a TCP connection to `host`:`port` opens within `seconds`, else why not. The attempt runs
    in a thread because a name lookup takes no timeout of its own."""
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            socket.create_connection((host, port), timeout=seconds).close()
            outcome.append(None)
        except OSError as e:
            outcome.append(e.strerror or str(e) or type(e).__name__)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome[0] if outcome else f"no answer within {seconds:g} s"


def hub_unreachable() -> str | None:
    """Why the hub cannot be used, as a clause for a message, or None when it can: an offline setting (read
    at each call), else the verdict of one connection attempt (made once per process: `probe.cache_clear()`
    makes it again)."""
    if setting := _offline_setting():
        return f"{setting} is set (the hub's offline mode)"
    return probe()


def _key(name: str) -> str:
    """A dataset's name as its cache folders spell it, compared loosely ("Rowan/hellaswag",
    "Rowan___hellaswag", "datasets--Rowan--hellaswag" all read "rowanhellaswag")."""
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def in_cache(dataset: str) -> bool:
    """Whether the Hugging Face caches may hold the hub dataset `dataset` ("owner/name"): a folder of its
    name in the datasets' cache (what `datasets` loads offline) or the hub's (its downloaded files).

    Loose on purpose: a folder that only resembles the name counts, so a dataset is said to be missing
    only when nothing of it was ever cached. The datasets' cache is where their library says (it need not
    be imported: HF_DATASETS_CACHE, else the datasets folder of HF_HOME).
    """
    from huggingface_hub import constants

    if (config := sys.modules.get("datasets.config")) is not None:
        prepared = Path(config.HF_DATASETS_CACHE)
    else:
        prepared = Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets")
    wanted = _key(dataset)
    for folder, prefix in ((prepared.expanduser(), ""), (Path(constants.HF_HUB_CACHE), "datasets--")):
        with contextlib.suppress(OSError):
            if any(n.startswith(prefix) and _key(n[len(prefix) :]) == wanted for n in os.listdir(folder)):
                return True
    return False


@functools.cache
def probe() -> str | None:
    """None when a TCP connection to the hub (or its proxy) opens within `PROBE_SECONDS`, else why not."""
    host, port = _hub_address()
    if (why := _connects(host, port, PROBE_SECONDS)) is None:
        return None
    return (
        f"{host}:{port} cannot be reached from this machine ({why}), so rr works as HF_HUB_OFFLINE=1 makes "
        "it, from the cache alone (set HF_HUB_OFFLINE=1 yourself to skip this check)"
    )


def _work_offline() -> None:
    """From here on this process uses the Hugging Face cache alone, as HF_HUB_OFFLINE=1 would have made it
    from the start: the environment (read by libraries not yet imported, and by child processes) and the
    two flags the hub's and the datasets' clients read at each request."""
    from huggingface_hub import constants

    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True
    if (datasets_config := sys.modules.get("datasets.config")) is not None:
        datasets_config.HF_HUB_OFFLINE = True


@contextlib.contextmanager
def from_hub(what: str, instead: str) -> Iterator[None]:
    """Load `what` from the hub or its cache within the block; an OSError there (the hub's and the datasets'
    clients raise one for every failure to fetch) becomes one `DataUnavailable`.

    Parameters
    ----------
    what
        What is loaded, for the message ("the GPT-2 tokenizer", "the roneneldan/TinyStories dataset").
    instead
        The sentences saying what serves without the hub (a local copy and how to give it).

    Notes
    -----
    Before the block runs, `hub_unreachable` decides: when the hub cannot be used the block runs in the
    offline mode, so the libraries answer from the cache at once rather than after their retries.
    """
    why = hub_unreachable()
    if why is not None:  # also where the setting came after the clients read it (a notebook's os.environ)
        _work_offline()
    try:
        yield
    except OSError as e:
        if why is not None:
            raise not_cached(what, why, instead) from e
        message = f"cannot load {what} from the Hugging Face hub ({type(e).__name__}: {e})."
        raise DataUnavailable(f"{message} {instead}") from e
