"""Images in the tracking API: ``rlcockpit.Image`` / ``wandb.Image`` in ``log`` and ``log_samples``, stored
content-addressed beside the store, read back through the Api, and sent to TensorBoard / MLflow / W&B in their
own form (read back with each tracker's own reader)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage
from test_tracking_third_party import _wandb_history

import rlcockpit
from rlcockpit.store.media import MediaError, MediaStore


def _pixels(im: PILImage.Image) -> np.ndarray:
    return np.asarray(im.convert("RGB"))


def _drawn() -> PILImage.Image:
    im = PILImage.new("RGB", (40, 24), "white")
    im.paste((255, 0, 0), (4, 4, 14, 20))
    im.paste((0, 0, 255), (22, 8, 34, 20))
    return im


def test_images_in_log_and_samples_read_back_through_the_api(start, store_dir: Path, tmp_path: Path) -> None:
    drawn = _drawn()
    path = tmp_path / "pic.jpg"
    drawn.save(path, format="JPEG", quality=95)
    floats = np.linspace(0, 1, 8 * 6 * 3).reshape(8, 6, 3)
    run = start()
    run.log({"examples": rlcockpit.Image(drawn, caption="two bars"), "loss": 0.5}, step=0)
    run.log_samples([
        {"prompt": "<image>How many shapes?", "response": "2", "reward": 1.0,
         "images": [rlcockpit.Image(drawn), rlcockpit.Image(str(path))]},
        {"prompt": "<image>Brightest?", "response": "x", "reward": 0.0, "image": rlcockpit.Image(floats, caption="f")},
    ], step=1)
    run.finish()

    api = rlcockpit.Api(str(store_dir))
    stored = api.run(run.id)
    (logged,) = stored.samples(0)
    assert logged["table"] == "examples" and logged["caption"] == "two bars"
    assert logged["image"]["_type"] == "image-file" and logged["image"]["width"] == 40
    assert np.array_equal(_pixels(api.image(logged["image"])), _pixels(drawn))

    rows = stored.samples(1)
    first, second = rows[0]["images"]
    assert first["sha256"] == logged["image"]["sha256"]  # same content: one file
    assert second["format"] == "jpeg" and api.media_file(second).read_bytes() == path.read_bytes()  # kept as given
    scaled = _pixels(api.image(rows[1]["image"]))
    assert np.array_equal(scaled, np.clip(floats * 255, 0, 255).astype(np.uint8))  # W&B's float scaling
    assert rows[1]["image"]["caption"] == "f"
    files = [p for p in (store_dir / "media" / "objects").rglob("*") if p.is_file()]
    assert len(files) == 3  # drawn (twice logged), the JPEG, the float array


def test_wandb_image_and_table_cells_under_import_as_wandb(start, store_dir: Path) -> None:
    import rlcockpit as wandb

    run = start()
    table = wandb.Table(columns=["prompt", "image", "score"])
    table.add_data("p", wandb.Image(np.zeros((5, 7), np.uint8)), 3)
    run.log({"gallery": [wandb.Image(np.full((4, 4, 3), 200, np.uint8)), wandb.Image(_drawn())], "t": table},
            step=2)
    run.finish()
    rows = rlcockpit.Api(str(store_dir)).run(run.id).samples(2)
    gallery = [r for r in rows if r.get("table") == "gallery"]
    assert [r["image"]["width"] for r in gallery] == [4, 40]
    (cell,) = [r for r in rows if r.get("table") == "t"]
    assert cell["image"]["width"] == 7 and cell["image"]["height"] == 5 and cell["score"] == 3


def test_bad_images_fail_at_construction_naming_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a readable image"):
        rlcockpit.Image(b"definitely not a png")
    with pytest.raises(ValueError, match="shape"):
        rlcockpit.Image(np.zeros((3, 4, 5, 6)))
    with pytest.raises(ValueError, match="NaN"):
        rlcockpit.Image(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="cannot make an image from a object"):
        rlcockpit.Image(object())
    with pytest.raises(FileNotFoundError):
        rlcockpit.Image(str(tmp_path / "missing.png"))


def test_a_reference_never_reaches_outside_the_media_root(tmp_path: Path) -> None:
    media = MediaStore(tmp_path)
    with pytest.raises(MediaError, match="not an image digest"):
        media.file({"_type": "image-file", "sha256": "../../etc/passwd", "path": "/etc/passwd"})
    with pytest.raises(MediaError, match="is not in"):
        media.file("0" * 64)


def _image_run(start, logger: str):  # noqa: ANN001, ANN202
    run = start(name=f"{logger}-img", loggers=["rlcockpit", logger])
    assert [s.name for s in run.sinks] == ["rlcockpit", logger], "sink failed to open"
    run.log({"loss": 1.0}, step=0)
    run.log_samples([{"prompt": "<image>count", "response": "2", "reward": 1.0, "image": rlcockpit.Image(_drawn())}],
                    step=0)
    run.finish()
    return run


def test_tensorboard_gets_images_read_with_event_accumulator(start, store_dir: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = _image_run(start, "tensorboard")
    acc = EventAccumulator(str(store_dir / "tensorboard" / run.id), size_guidance={"images": 0})
    acc.Reload()
    (event,) = acc.Images("samples/image/0")
    assert event.step == 0 and (event.width, event.height) == (40, 24)
    assert np.array_equal(_pixels(PILImage.open(io.BytesIO(event.encoded_image_string))), _pixels(_drawn()))


def test_mlflow_gets_images_read_with_mlflow_client(start, store_dir: Path) -> None:
    from mlflow.tracking import MlflowClient

    from rlcockpit.tracking.sinks.mlflow_sink import default_tracking_uri

    _image_run(start, "mlflow")
    client = MlflowClient(tracking_uri=default_tracking_uri(store_dir))
    (exp,) = [e for e in client.search_experiments() if e.name == "proj"]
    (mrun,) = client.search_runs([exp.experiment_id])
    (entry,) = client.list_artifacts(mrun.info.run_id, "samples/image/0")
    local = client.download_artifacts(mrun.info.run_id, entry.path, str(store_dir / "dl"))
    assert np.array_equal(_pixels(PILImage.open(local)), _pixels(_drawn()))


@pytest.mark.slow
def test_wandb_gets_images_in_its_sample_table(start, store_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_MODE", raising=False)  # offline is the default
    run = _image_run(start, "wandb")
    (run_dir,) = (store_dir / "wandb" / run.id / "wandb").glob("offline-run-*")
    history, _ = _wandb_history(run_dir)
    row = history[0]  # W&B's own record of an image gallery in the step's row (nested keys joined by "/")
    assert row["samples/image/_type"] == "images/separated" and row["samples/image/count"] == 1
    (name,) = row["samples/image/filenames"]
    png = run_dir / "files" / name
    assert np.array_equal(_pixels(PILImage.open(png)), _pixels(_drawn()))


def test_queued_images_count_against_the_queue_bound() -> None:
    from rlcockpit.tracking.write.entries import samples_cost

    big = rlcockpit.Image(np.random.default_rng(0).integers(0, 255, (256, 256, 3), dtype=np.uint8))
    assert len(big.png) > 150_000  # noise does not compress
    plain = samples_cost([{"prompt": "p", "response": "r"}])
    assert samples_cost([{"prompt": "p", "response": "r", "images": [big, big]}]) >= plain + 2 * len(big.png)
