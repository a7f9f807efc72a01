"""The reader registry: one table of formats that a plugin extends with one ``register_formats`` function."""

import json
import types

import numpy as np
import pytest

import automil
from automil import plugins
from automil.data.readers import FormatError, detect_format, formats


def read_json_lines(path):
    """A plugin's reader: one JSON object per bag, ``{"bag": name, "label": 0/1, "x": [[...], ...]}``."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return automil.Bags.from_list([np.asarray(r["x"], float) for r in records], [r["label"] for r in records],
                                  names=[r["bag"] for r in records])


def json_lines_plugin(name="bag-json"):
    @automil.hookimpl
    def register_formats(register):
        register(automil.Reader(name=name, read=read_json_lines, detect=lambda path: path.suffix == ".jsonl",
                                description="one JSON object per bag", aliases=("jsonl",)))

    return types.SimpleNamespace(register_formats=register_formats)


@pytest.fixture
def bag_json(fresh_plugins, tmp_path):
    plugins.plugin_manager().register(json_lines_plugin(), name="jsonbags")
    path = tmp_path / "three.jsonl"
    path.write_text("\n".join(json.dumps({"bag": f"b{i}", "label": i % 2, "x": [[i, 1.0]] * (i + 1)})
                              for i in range(3)))
    return path


def test_a_plugin_adds_a_format_that_every_reading_entry_point_takes(bag_json):
    assert formats()["bag-json"].plugin == "jsonbags"
    assert detect_format(bag_json) == "bag-json"
    for bags in (automil.load_bags(bag_json), automil.read_bags(bag_json, format="JSONL"),
                 automil.read_bags(bag_json, format="bag-json")):
        assert bags.n_bags == 3 and bags.n_instances == 6
        np.testing.assert_array_equal(bags.y, [0, 1, 0])
        assert list(bags.names) == ["b0", "b1", "b2"]


def test_plugin_formats_are_detected_before_the_built_in_ones(bag_json):
    names = list(formats())
    assert names.index("bag-json") < names.index("npz") < names.index("bag-folder")
    assert {"mill", "mill-sparse", "mil-csv", "spaced", "mcilboost"} <= {
        name for name, reader in formats().items() if reader.plugin == plugins.CORE_FORMATS}


def test_the_unknown_format_error_lists_a_plugin_format_beside_the_built_in_ones(bag_json):
    with pytest.raises(ValueError, match=r"unknown file format 'arff'; known formats: bag-json, mill, .*JSONL"):
        automil.read_bags(bag_json, format="arff")


def test_a_plugin_claiming_a_built_in_format_name_is_an_error_naming_both(fresh_plugins):
    plugins.plugin_manager().register(json_lines_plugin(name="npz"), name="clash")
    with pytest.raises(plugins.DuplicateNameError, match="'npz' is registered twice: by plugin 'automil' and "
                                                         "by plugin 'clash'"):
        formats()


def test_a_file_no_reader_claims_is_read_as_text_and_its_errors_name_the_line(fresh_plugins, tmp_path):
    path = tmp_path / "bad.data"
    path.write_text("i1,b1,1,0.5,0.25\ni2,b1,1,0.5,oops\n")
    with pytest.raises(FormatError, match=r"bad.data, line 2"):
        automil.load_bags(path)
