"""Where training runs: the CPU, or a CUDA GPU when torch sees one.

``"auto"`` (the default everywhere) picks the first CUDA device when torch has CUDA and
sees a GPU, else the CPU; ``"cpu"`` and ``"cuda"`` / ``"cuda:N"`` ask for one.  Training
code copies the module and the training tensors to the device once and indexes batches
there; models are handed back on the CPU (prediction, saving and audits run there).

The Poisson sampler draws on the CPU from the run's generator, so a seed selects the same
batches on every device.  The Gaussian noise is drawn where the gradients live: on CUDA
from a CUDA generator seeded by one draw of the run's generator.  A seeded run is
reproducible bit for bit on the CPU, and on a GPU up to the rounding of kernels that sum
in a varying order; CPU and GPU runs of one seed differ in floating point.

>>> import torch
>>> resolve_device("cpu")
device(type='cpu')
>>> describe_device(torch.device("cpu"))
'cpu'
"""

from __future__ import annotations

from typing import Any

from safeshare.errors import InputError

DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


def _torch() -> Any:
    from safeshare.train.dpsgd import require_torch  # dpsgd imports this module

    return require_torch()[0]


def resolve_device(device: Any = "auto") -> Any:
    """The ``torch.device`` that ``device`` names (None means ``"auto"``; a ``torch.device``
    is returned as it is).

    Refuses an unknown name, and CUDA where torch has none, saying what torch sees.
    """
    torch = _torch()
    if isinstance(device, torch.device):
        return device
    name = "auto" if device is None else str(device).strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kind, _, index = name.partition(":")
    if kind not in DEVICES or (index and (kind != "cuda" or not index.isdigit())):
        raise InputError(f"device {device!r} is unknown; use auto, cpu, cuda or cuda:N")
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        built = "without CUDA" if torch.version.cuda is None else f"with CUDA {torch.version.cuda}"
        raise InputError(
            f"device {device!r}: torch {torch.__version__} (built {built}) sees no CUDA GPU; "
            "train with --device cpu (or auto), or install a CUDA build of torch on a GPU machine"
        )
    count = torch.cuda.device_count()
    if index and int(index) >= count:
        raise InputError(
            f"device {device!r}: torch sees {count} CUDA GPU(s), numbered 0 to {count - 1}"
        )
    return torch.device(name if index else "cuda:0")


def describe_device(device: Any) -> str:
    """What the card says: ``"cpu"`` or ``"cuda:0 (NVIDIA H200)"``."""
    torch = _torch()
    if device.type != "cuda":
        return str(device.type)
    index = 0 if device.index is None else device.index
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


def noise_generator(device: Any, generator: Any) -> Any:
    """The generator the noise is drawn from on ``device``: ``generator`` itself on the CPU,
    else a generator on ``device`` seeded by one draw of ``generator``."""
    torch = _torch()
    if device.type == "cpu":
        return generator
    on_device = torch.Generator(device=device)
    on_device.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
    return on_device
