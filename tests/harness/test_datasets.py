"""The dataset loaders, on the real files and on malformed ones."""

import json

import pytest

from harness.datasets import DatasetError, load_dataset, read_dataset


@pytest.mark.parametrize("dataset, split, count, with_gold", [
    ("spinach", "dev", 155, False), ("spinach", "test", 165, False), ("qald7", "test", 50, False),
    ("qald9plus", "test", 136, False), ("qald9plus", "train", 371, False), ("qald10", "test", 394, True),
    ("wikiwebquestions", "dev", 454, True), ("wikiwebquestions", "test", 1431, False),
])
def test_the_real_files_load(shared_dir, dataset, split, count, with_gold):
    examples = load_dataset(dataset, split, shared_dir / "datasets")
    assert len(examples) == count
    assert all(example.question and example.gold_sparql for example in examples)
    assert all((example.gold_answer is not None) == with_gold for example in examples)
    assert len({example.id for example in examples}) == count


def test_qald10_questions_in_other_languages_and_boolean_answers(shared_dir):
    english = load_dataset("qald10", None, shared_dir / "datasets")
    german = load_dataset("qald10", None, shared_dir / "datasets", language="de")
    assert english[0].question == "After whom is the Riemannian geometry named?"
    assert german[0].question != english[0].question and german[0].gold_answer == english[0].gold_answer
    assert any(example.gold_answer is True for example in english)


def test_qald10_in_chinese_skips_and_names_the_12_questions_without_chinese_text(shared_dir):
    loaded = read_dataset("qald10", None, shared_dir / "datasets", language="zh")
    assert len(loaded.examples) == 382 and len(loaded.without_language) == 12
    assert "130" in loaded.without_language and all(example.question for example in loaded.examples)
    with pytest.raises(DatasetError, match="no question has text in 'xx'"):
        read_dataset("qald10", None, shared_dir / "datasets", language="xx")


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("nope", None, tmp_path)
    with pytest.raises(DatasetError, match="no split 'dev'"):
        load_dataset("qald10", "dev", tmp_path)
    with pytest.raises(DatasetError, match="download_datasets"):
        load_dataset("qald7", None, tmp_path)
    (tmp_path / "qald7").mkdir()
    (tmp_path / "qald7" / "test.json").write_text("[{")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_dataset("qald7", None, tmp_path)
    (tmp_path / "qald7" / "test.json").write_text(json.dumps([{"id": 1, "question": "q"}]))
    with pytest.raises(DatasetError, match="test.json: an entry lacks a field"):
        load_dataset("qald7", None, tmp_path)


def test_the_registry_names_the_files_the_download_fetches_and_their_published_sizes(shared_dir):
    from harness.datasets import DATASETS, Gold
    from scripts.download_datasets import KQAPRO, SOURCES

    fetched = {source.target for source in SOURCES} | {f"{KQAPRO.target}/{name}" for name in KQAPRO.questions}
    assert {path for record in DATASETS.values() for path in record.splits.values()} == fetched
    assert {f"{split}.json": count for split, count in DATASETS["kqapro"].published.items()} == KQAPRO.questions
    for record in DATASETS.values():
        assert set(record.paper) <= set(record.published) <= set(record.splits), record.name
        if record.gold is Gold.RESULTS:
            for split, count in record.published.items():
                assert len(load_dataset(record.name, split, shared_dir / "datasets")) == count, (record.name, split)
