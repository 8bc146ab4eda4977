"""A transform's card: the figures of the attack report that names it, read by the server,
which warns of requests made with a transform it cannot vouch for."""

from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path

import pytest
import torch

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from safeshare.errors import InputError
from safeshare.obfuscate.card import identity, measured, registered, with_figures
from safeshare.obfuscate.client import ObfuscatingClient
from safeshare.obfuscate.model import FrozenModel
from safeshare.obfuscate.server import create_app, serve_in_thread
from safeshare.obfuscate.transform import ObfuscationTransform
from safeshare.obfuscate.wire import encode_request
from tests.obfuscate.conftest import TEXTS

REPORT = {  # the part of an attack report (attack.json) a card reads
    "attacks": [
        {"attack": "nearest neighbour", "input": "obfuscated", "recovered": 0.013, "tokens": 900},
        {"attack": "learned inverter", "input": "obfuscated", "recovered": 0.31, "tokens": 900},
        {"attack": "nearest neighbour", "input": "clean", "recovered": 1.0, "tokens": 900},
    ],
}


def report(folder: Path, transform: ObfuscationTransform) -> Path:
    """An attack report on ``transform`` in ``folder``, as ``obfuscate attack`` writes it."""
    folder.mkdir(parents=True)
    record = {**REPORT, "transform": identity(transform)}
    (folder / "attack.json").write_text(json.dumps(record))
    return folder


def saved(model: FrozenModel, folder: Path, seed: int) -> ObfuscationTransform:
    transform = ObfuscationTransform.for_model(model, seed=seed)
    transform.save(folder)
    return ObfuscationTransform.load(folder, model)


def test_a_transform_is_named_by_its_weights(minilm: FrozenModel, tmp_path: Path) -> None:
    first = ObfuscationTransform.for_model(minilm, seed=1)
    first.save(tmp_path / "t")
    assert identity(ObfuscationTransform.load(tmp_path / "t", minilm)) == identity(first)
    with torch.no_grad():
        first.network.log_scale.bias.add_(0.5)  # retrained: another transform
    assert identity(first) != identity(ObfuscationTransform.load(tmp_path / "t", minilm))


def test_a_card_holds_the_figures_of_these_very_weights(
    minilm: FrozenModel, tmp_path: Path
) -> None:
    transform = saved(minilm, tmp_path / "t", seed=2)
    served = registered(transform)
    assert not served.measured and served.transform == identity(transform)  # never attacked
    (card,) = with_figures([served], [measured(report(tmp_path / "attack", transform))])
    assert card.transform == identity(transform) and card.problem() is None
    assert card.strongest == {"attack": "learned inverter", "recovered": 0.31}
    assert len(card.attacks) == 2  # (the clean rows are not the transform's)
    retrained = registered(ObfuscationTransform.for_model(minilm, seed=3))  # new weights
    (stale,) = with_figures([retrained], [measured(tmp_path / "attack")])
    assert not stale.measured and "has no attack figures" in str(stale.problem())
    (tmp_path / "attack" / "attack.json").write_text(json.dumps(REPORT))  # names no transform
    with pytest.raises(InputError, match="names no transform"):
        measured(tmp_path / "attack")


def test_the_server_warns_of_transforms_it_cannot_vouch_for(
    minilm: FrozenModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    attacked = saved(minilm, tmp_path / "attacked", seed=4)
    unmeasured = saved(minilm, tmp_path / "unmeasured", seed=5)
    stranger = ObfuscationTransform.for_model(minilm, seed=6)
    figures = measured(report(tmp_path / "attack", attacked))
    cards = with_figures([registered(attacked), registered(unmeasured)], [figures])
    caplog.set_level(logging.WARNING, logger="safeshare.obfuscate.server")
    with serve_in_thread(create_app(minilm, cards=cards)) as url:
        with urllib.request.urlopen(url + "/v1/info", timeout=30) as response:
            shown = json.loads(response.read())["transforms"]
        assert shown[identity(attacked)]["strongest"]["recovered"] == 0.31
        assert shown[identity(unmeasured)]["attacks"] == []
        warned = {}
        for name, transform in (("measured", attacked), ("unmeasured", unmeasured),
                                ("stranger", stranger)):  # fmt: skip
            client = ObfuscatingClient(transform, url, model=minilm)
            assert client.embed(TEXTS).shape == (4, 384)  # served either way
            client.embed(TEXTS[:2])
            warned[name] = client.server_warnings
        body = encode_request(torch.zeros(1, 3, 384).numpy(), [3], fingerprint=minilm.fingerprint)
        request = urllib.request.Request(
            url + "/v1/embed", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            anonymous = response.headers.get("Warning")
    assert warned["measured"] == set()
    (unmeasured_warning,) = warned["unmeasured"]
    assert unmeasured_warning.startswith('299 safeshare "transform ')
    assert "has no attack figures" in unmeasured_warning
    assert "is not registered with this server" in next(iter(warned["stranger"]))
    assert "names no transform" in anonymous
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 3  # one line per reason, not one per request
    assert sum("has no attack figures" in line for line in logged) == 1


def test_serve_says_when_an_attack_report_measured_no_transform_it_serves(
    minilm: FrozenModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from safeshare.cli.obfuscate import obfuscate_app

    attacked = saved(minilm, tmp_path / "attacked", seed=7)
    saved(minilm, tmp_path / "other", seed=8)
    report(tmp_path / "attack", attacked)
    started = []
    monkeypatch.setattr("safeshare.obfuscate.server.serve", lambda app, **_: started.append(app))
    for served in ([], ["--transform", str(tmp_path / "other")]):
        done = CliRunner().invoke(
            obfuscate_app, ["serve", *served, "--attacks", str(tmp_path / "attack")]
        )
        assert done.exit_code == 0, done.output
        said = " ".join(done.output.split())
        assert f"measured transform {identity(attacked)[:16]}…, which this server does not" in said
    assert len(started) == 2
    both = ["--transform", str(tmp_path / "attacked"), "--attacks", str(tmp_path / "attack")]
    done = CliRunner().invoke(obfuscate_app, ["serve", *both])
    assert "does not serve" not in done.output and "attacks measured" in done.output


def test_serve_refuses_an_address_it_cannot_listen_on_before_it_starts() -> None:
    import socket

    from typer.testing import CliRunner

    from safeshare.cli.obfuscate import obfuscate_app

    with socket.create_server(("127.0.0.1", 0)) as held:  # another program holds the port
        port = held.getsockname()[1]
        done = CliRunner().invoke(obfuscate_app, ["serve", "--port", str(port)])
    assert isinstance(done.exception, InputError) and "serving" not in done.output
    assert f"cannot listen on 127.0.0.1 port {port}" in str(done.exception)
    nowhere = CliRunner().invoke(
        obfuscate_app, ["serve", "--host", "not-an-ip.invalid", "--allow-remote"]
    )
    assert isinstance(nowhere.exception, InputError)
    assert "--host not-an-ip.invalid: no such address" in str(nowhere.exception)


def test_an_address_is_refused_when_any_of_the_host_s_addresses_is_held(monkeypatch) -> None:
    """``localhost`` may resolve to ``::1`` first and ``127.0.0.1`` second; the server binds
    both, so a port held on the second is refused though the first is free."""
    import socket

    from safeshare.obfuscate.server import check_address

    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]

        def dual_stack(host: str, asked: int, **_: object) -> list[tuple]:
            return [
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", asked, 0, 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", asked)),
            ]

        monkeypatch.setattr(socket, "getaddrinfo", dual_stack)
        with pytest.raises(InputError, match=f"cannot listen on localhost port {port}"):
            check_address("localhost", port)
        check_address("localhost", 0)  # (each address free on a port of its own)
