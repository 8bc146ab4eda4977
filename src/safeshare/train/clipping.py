"""Per-record gradient clipping for networks of Linear layers, in one ordinary backward pass.

For a Linear layer ``z = a W^T + b`` over a batch (one row per record), record i's
gradient of its own loss is the outer product ``g_i a_i^T`` for W and ``g_i`` for b,
where ``g_i = d loss_i / d z_i``: its squared norm is ``|g_i|^2 (|a_i|^2 + 1)``.  So a
backward pass to the layer *outputs* (never to the weights) gives every record's norm
over all layers in O(batch x width); the clip factors ``c_i = min(1, C / (norm_i +
1e-6))`` (Opacus's formula) follow, and then the clipped sum itself, ``(c g)^T a`` for
W and ``c^T g`` for b: the one matmul an ordinary backward would do for the weights.

A layer may also see a sequence per record, 3-d inputs (records x tokens x features), as
every projection of a transformer does: record i's weight gradient is then ``G_i^T A_i``
(its tokens' output gradients against their inputs), whose squared norm is found either
by forming it (records x out x in numbers) or by the ghost identity
``sum_{t,s} (a_t . a_s)(g_t . g_s)`` (records x tokens^2 of them), whichever is smaller
(Li et al. 2022; Bu et al. 2023); the bias's is ``|sum_t g_t|^2``.  Padding after a
text's end adds nothing: its output gradient is zero.

It is exact, not an approximation, for networks whose trainable parameters all sit in
``nn.Linear`` layers that see 2-d or 3-d inputs, each layer called once per forward,
with per-record operations between them (activations, dropout, attention within one
record's sequence, frozen layers).  Anything else it can see is refused with a pointer to Opacus's clipping (an
operation that mixes records without parameters, as ``x - x.mean(0)``, it cannot see:
per-record clipping means nothing there, in Opacus too).

>>> import torch
>>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
>>> x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
>>> def losses(logits):
...     return torch.nn.functional.cross_entropy(logits, y, reduction="none")
>>> with LinearGhostClipping(net, max_grad_norm=0.1) as clipping:
...     norms = clipping.backward(x, losses)
>>> total = sum(float(p.grad.square().sum()) for p in net.parameters()) ** 0.5
>>> norms.shape, total <= 8 * 0.1  # 8 records, each clipped to norm 0.1
(torch.Size([8]), True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from safeshare.errors import InputError
from safeshare.train.dpsgd import require_torch

# added to each norm before dividing, as Opacus does: a clipped norm stays below C
# despite rounding, and a zero gradient divides nothing by zero
_STABILITY = 1e-6


class LinearGhostClipping:
    """Sets each parameter's ``.grad`` to the sum of per-record gradients clipped to norm C.

    Hooks on the module's Linear layers record their inputs and outputs during
    :meth:`backward` only; :meth:`close` (or leaving the ``with`` block) removes them.
    """

    def __init__(self, module: Any, max_grad_norm: float) -> None:
        torch, _ = require_torch()
        if not (math.isfinite(max_grad_norm) and max_grad_norm > 0):
            raise InputError(f"max_grad_norm must be positive, got {max_grad_norm!r}")
        self.module = module
        self.max_grad_norm = float(max_grad_norm)
        self._layers = _trainable_linear_layers(torch, module)
        self._recorded: dict[Any, tuple[Any, Any, int]] = {}
        self._recording = False
        self._hooks = [layer.register_forward_hook(self._record) for layer in self._layers]

    def __enter__(self) -> LinearGhostClipping:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the hooks: the module is as it was given."""
        for hook in self._hooks:
            hook.remove()
        self._hooks = []

    def _record(self, layer: Any, inputs: tuple[Any, ...], output: Any) -> None:
        if not self._recording:
            return
        if layer in self._recorded:
            raise InputError(
                "a Linear layer ran twice in one forward pass (weights reused): its per-record "
                "gradient is then a sum of outer products, which linear-ghost clipping does not "
                "handle; use clipping='ghost' (Opacus)"
            )
        (features,) = inputs
        if features.dim() not in (2, 3):
            raise InputError(
                f"a Linear layer got a {features.dim()}-d input; linear-ghost clipping needs "
                "2-d inputs (records x features) or 3-d ones (records x tokens x features); "
                "use clipping='ghost' (Opacus)"
            )
        self._recorded[layer] = (features.detach(), output, output._version)

    def backward(
        self, inputs: Any, losses: Callable[[Any], Any], *, accumulate: bool = False
    ) -> Any:
        """Forward ``inputs``, then set every trainable ``.grad`` to the clipped sum.

        ``losses`` maps the module's output to one loss per record (shape: records).
        Each parameter's ``.grad`` is replaced, or with ``accumulate`` added to (a batch
        run in pieces: each record is clipped on its own, so the pieces' sums add up to the
        batch's).  Returns each record's gradient norm before clipping; an empty batch
        gives zero gradients.
        """
        torch, _ = require_torch()
        kept = [p.grad for p in self._parameters()] if accumulate else []
        used, grads, per_record = self._output_gradients(inputs, losses)
        with torch.no_grad():
            norms = self._clip_and_sum(torch, used, grads, len(per_record), per_record.dtype)
            if accumulate:
                for parameter, before in zip(self._parameters(), kept, strict=True):
                    if before is not None:
                        parameter.grad += before
        self._recorded = {}
        return norms

    def record_gradients(self, inputs: Any, losses: Callable[[Any], Any]) -> list[tuple[Any, Any]]:
        """Forward ``inputs`` and form each record's gradient of its own loss: (parameter,
        tensor of shape (records, *parameter.shape)) for every trainable parameter the loss
        depends on.  ``.grad`` is left alone.  It holds records x parameters numbers: for
        clipping a group of records (a user) as one, where per-record norms do not suffice.
        """
        torch, _ = require_torch()
        used, grads, _ = self._output_gradients(inputs, losses)
        formed = []
        with torch.no_grad():
            for layer, grad in zip(used, grads, strict=True):
                if grad is None:
                    continue
                features = self._recorded[layer][0]
                if layer.weight.requires_grad:
                    if features.dim() == 3:
                        weight = torch.bmm(grad.transpose(1, 2), features)
                    else:
                        weight = grad.unsqueeze(2) * features.unsqueeze(1)
                    formed.append((layer.weight, weight))
                if _has_trainable_bias(layer):
                    formed.append((layer.bias, grad.sum(dim=1) if grad.dim() == 3 else grad))
        self._recorded = {}
        return formed

    def _output_gradients(
        self, inputs: Any, losses: Callable[[Any], Any]
    ) -> tuple[list[Any], list[Any], Any]:
        """Forward ``inputs`` recording the Linear layers; (the layers used, each one's
        output gradient of the summed per-record losses (None: unused), the losses)."""
        torch, _ = require_torch()
        if not self._hooks:
            raise InputError("this LinearGhostClipping is closed; make a new one")
        self._recorded = {}
        self._recording = True
        try:
            per_record = losses(self.module(inputs))
        finally:
            self._recording = False
        records = int(inputs.shape[0])
        if tuple(per_record.shape) != (records,):
            raise InputError(
                f"losses must give one loss per record, shape ({records},); got "
                f"{tuple(per_record.shape)}: use the loss with reduction='none'"
            )
        used = [layer for layer in self._layers if layer in self._recorded]
        outputs = [self._recorded[layer][1] for layer in used]
        for layer in used:
            _, output, version = self._recorded[layer]
            if output._version != version:
                raise InputError(
                    "an in-place operation changed a Linear layer's output (e.g. "
                    "ReLU(inplace=True)); use the out-of-place version"
                )
        if records == 0 or not outputs:
            return used, [None] * len(used), per_record
        grads = torch.autograd.grad(per_record.sum(), outputs, allow_unused=True)
        return used, list(grads), per_record

    def zero(self) -> None:
        """Set every trainable ``.grad`` to zero: an empty batch's clipped sum, found without
        running the module on no records."""
        torch, _ = require_torch()
        for parameter in self._parameters():
            parameter.grad = torch.zeros_like(parameter)

    def _parameters(self) -> list[Any]:
        return [
            p
            for layer in self._layers
            for p in (layer.weight, layer.bias)
            if p is not None and p.requires_grad
        ]

    def _clip_and_sum(
        self, torch: Any, used: list[Any], grads: list[Any], records: int, dtype: Any
    ) -> Any:
        squared = torch.zeros(records, dtype=dtype, device=self._layers[0].weight.device)
        parts = []
        for layer, grad in zip(used, grads, strict=True):
            if grad is None:  # the loss does not depend on this layer: zero gradient
                continue
            features = self._recorded[layer][0]
            weight, bias = layer.weight.requires_grad, _has_trainable_bias(layer)
            if features.dim() == 3:
                squared += _sequence_squared_norms(torch, features, grad, weight, bias)
            else:
                # |a_i|^2 (by vector_norm: twice as fast as summing squares, one rounding more)
                scale = (
                    _row_norms(torch, features).square() if weight else torch.zeros_like(squared)
                )
                squared += _row_norms(torch, grad).square() * (scale + 1.0 if bias else scale)
            parts.append((layer, features, grad, weight, bias))
        norms = squared.clamp(min=0.0).sqrt()  # the ghost identity may round below 0
        factors = (self.max_grad_norm / (norms + _STABILITY)).clamp(max=1.0)
        for layer, features, grad, weight, bias in parts:
            # scale each record's rows, then one matmul over every (record, token) row
            clipped = grad * factors.view(-1, *([1] * (grad.dim() - 1)))
            clipped = clipped.reshape(-1, clipped.shape[-1])
            if weight:
                layer.weight.grad = clipped.t().mm(features.reshape(-1, features.shape[-1]))
            if bias:
                layer.bias.grad = clipped.sum(dim=0)
        summed = {id(part[0]) for part in parts}
        for layer in self._layers:  # unused layers (and empty batches) get zeros
            if id(layer) not in summed:
                for parameter in (layer.weight, layer.bias):
                    if parameter is not None and parameter.requires_grad:
                        parameter.grad = torch.zeros_like(parameter)
        return norms


def _sequence_squared_norms(torch: Any, features: Any, grad: Any, weight: bool, bias: bool) -> Any:
    """Each record's squared gradient norm of a layer that saw a sequence per record.

    ``features`` (records, tokens, in), ``grad`` (records, tokens, out).  The weight's part
    is formed (records x out x in) or found by the ghost identity (records x tokens^2),
    whichever holds fewer numbers.
    """
    records, tokens, width_in = features.shape
    width_out = grad.shape[-1]
    squared = torch.zeros(records, dtype=grad.dtype, device=grad.device)
    if weight:
        if width_in * width_out <= tokens * tokens:
            squared += torch.bmm(grad.transpose(1, 2), features).square().sum(dim=(1, 2))
        else:
            inputs = torch.bmm(features, features.transpose(1, 2))
            outputs = torch.bmm(grad, grad.transpose(1, 2))
            squared += (inputs * outputs).sum(dim=(1, 2))
    if bias:
        squared += grad.sum(dim=1).square().sum(dim=1)
    return squared


def _row_norms(torch: Any, matrix: Any) -> Any:
    return torch.linalg.vector_norm(matrix, dim=1)


def _has_trainable_bias(layer: Any) -> bool:
    return layer.bias is not None and bool(layer.bias.requires_grad)


def _is_batch_norm(torch: Any, module: Any) -> bool:
    return isinstance(module, torch.nn.modules.batchnorm._BatchNorm)


def check_linear_network(module: Any) -> None:
    """Refuse a module that linear-ghost clipping cannot clip exactly (before any budget is used)."""
    torch, _ = require_torch()
    _trainable_linear_layers(torch, module)


def _trainable_linear_layers(torch: Any, module: Any) -> list[Any]:
    """The Linear layers holding trainable parameters; refuse any other trainable parameter."""
    layers: list[Any] = []
    owned: set[int] = set()
    for sub in module.modules():
        if isinstance(sub, torch.nn.Linear):
            mine = [p for p in (sub.weight, sub.bias) if p is not None and p.requires_grad]
            if any(id(p) in owned for p in mine):
                raise InputError(
                    "two Linear layers share a parameter (tied weights); linear-ghost clipping "
                    "does not handle shared weights: use clipping='ghost' (Opacus)"
                )
            owned.update(id(p) for p in mine)
            if mine:
                layers.append(sub)
    others = sorted(
        {
            type(sub).__name__
            for sub in module.modules()
            for p in sub.parameters(recurse=False)
            if p.requires_grad and id(p) not in owned
        }
    )
    batch_norms = [type(sub).__name__ for sub in module.modules() if _is_batch_norm(torch, sub)]
    if batch_norms:  # normalises by batch statistics: one record's output depends on the others
        raise InputError(
            f"{batch_norms[0]} mixes the records of a batch, so no per-record gradient exists "
            "(nor a DP guarantee by per-record clipping): use LayerNorm or GroupNorm"
        )
    if others:
        raise InputError(
            f"linear-ghost clipping handles networks whose trainable parameters all sit in "
            f"nn.Linear layers; this one also trains {others}: use clipping='ghost' (Opacus)"
        )
    if not layers:
        raise InputError("the module has no trainable parameters to clip")
    return layers
