"""Running the black box many times: serially, or in worker processes, with progress.

Membership secrets travel to workers as boolean masks (the data is inherited once, by fork);
a user sampler's secrets are drawn in the parent, from its one generator, and sent as they are.

>>> with Runner(lambda rows: sum(rows), [1, 2, 3]) as runner:
...     runner.run([[True, False, True], [False, True, True]])
[4, 5]
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from types import TracebackType
from typing import Any

from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError, SafeshareError
from safeshare.pac.errors import MechanismFailedError
from safeshare.pac.sampling import take_rows

Mechanism = Callable[[Any], Any]
"""The black box: a deterministic function of a dataset (the secret) to numbers."""

_WORKER: dict[str, Any] = {}


class Runner:
    """Evaluates ``mechanism`` on secrets; ``data`` set means secrets are membership masks."""

    def __init__(self, mechanism: Mechanism, data: Any | None, workers: int = 1) -> None:
        if not callable(mechanism):
            raise InputError(f"the function must be callable, not {type(mechanism).__name__}")
        if not isinstance(workers, int) or workers < 1:
            raise InputError(f"workers must be a positive integer, got {workers!r}")
        self.mechanism = mechanism
        self.data = data
        self.workers = workers
        self._pool: Executor | None = None

    def __enter__(self) -> Runner:
        if self.workers > 1:
            methods = multiprocessing.get_all_start_methods()
            if "fork" not in methods:
                raise InputError(
                    "workers > 1 needs the 'fork' start method (Linux, macOS); use workers=1"
                )
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_init_worker,
                initargs=(self.mechanism, self.data),
            )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def run(
        self,
        secrets: Sequence[Any],
        progress: Progress = no_progress,
        *,
        step: str = "black-box runs",
        done: int = 0,
        total: int | None = None,
    ) -> list[Any]:
        """The outputs for ``secrets``, in order; ``progress`` sees ``(done + i) / total``."""
        total = total or len(secrets)
        outputs: list[Any] = []
        chunk = max(1, total // 50)
        for start in range(0, len(secrets), chunk):
            batch = secrets[start : start + chunk]
            try:
                if self._pool is None:
                    outputs.extend(_call(self.mechanism, self.data, s) for s in batch)
                else:
                    size = max(1, len(batch) // self.workers)
                    outputs.extend(self._pool.map(_call_in_worker, batch, chunksize=size))
            except SafeshareError:
                raise
            except Exception as err:  # the user's function: its message may quote records
                name = getattr(self.mechanism, "__qualname__", type(self.mechanism).__name__)
                raise MechanismFailedError(
                    f"the function {name} raised {type(err).__name__} on a black-box run (its "
                    "message is not shown: it may hold values of the data); run it on the data "
                    "yourself to see why, fix it, and calibrate again"
                ) from None
            progress(step, min(1.0, (done + len(outputs)) / total))
        return outputs


def _call(mechanism: Mechanism, data: Any | None, secret: Any) -> Any:
    return mechanism(secret if data is None else take_rows(data, secret))


def _init_worker(mechanism: Mechanism, data: Any | None) -> None:
    _WORKER["mechanism"] = mechanism
    _WORKER["data"] = data


def _call_in_worker(secret: Any) -> Any:
    return _call(_WORKER["mechanism"], _WORKER["data"], secret)
