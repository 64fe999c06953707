"""The capture payload is derived from the record model: one definition of a handoff's sections.

Nothing here lists a section by hand: the sections come from ``HandoffRecord.model_fields`` and the payload's
own fields, so a section added to the record (with an input model for its part) is checked without editing this.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, Field

from baton_engine.handoff import capture
from baton_engine.handoff.model import HandoffRecord, Risk

PAYLOAD = capture.CapturePayload.model_fields
RECORD = HandoffRecord.model_fields
REAL_RECORD = Path(__file__).parents[1] / "brief" / "data" / "bench-500k-handoff.json"


def _part(annotation: Any) -> tuple[Any, bool]:
    """(model, is a list) of a field annotation."""
    if get_origin(annotation) is list:
        return get_args(annotation)[0], True
    return annotation, False


def _sections() -> dict[str, tuple[type[BaseModel], bool]]:
    """The record's fields whose values are models or lists of models: its sections."""
    out = {}
    for name, field in RECORD.items():
        part, is_list = _part(field.annotation)
        if isinstance(part, type) and issubclass(part, BaseModel):
            out[name] = (part, is_list)
    return out


def test_every_record_section_with_an_input_model_is_a_payload_section_and_vice_versa() -> None:
    sections = _sections()
    authored = {name for name, (part, _) in sections.items() if part in capture.SECTION_INPUTS}
    assert set(PAYLOAD) == authored
    for name in PAYLOAD:
        part, is_list = sections[name]
        given, given_list = _part(PAYLOAD[name].annotation)
        assert given is capture.SECTION_INPUTS[part] and given_list == is_list, name
        assert PAYLOAD[name].is_required() == RECORD[name].is_required(), name
    assert set(capture.SECTION_INPUTS) <= {part for part, _ in sections.values()}, "an input model types no section"


def test_an_input_model_takes_only_fields_of_its_record_part() -> None:
    """Each input model names the record part's own fields; the one input-only field is evidence ``output``,
    which capture turns into the record's ``digest`` and (when no result is given) ``result``."""
    extra = {part.__name__: set(model.model_fields) - set(part.model_fields)
             for part, model in capture.SECTION_INPUTS.items()}
    assert {name: fields for name, fields in extra.items() if fields} == {"Evidence": {"output"}}


def test_a_section_added_to_the_record_becomes_a_payload_section() -> None:
    class WithMoreRisks(HandoffRecord):
        more_risks: list[Risk] = Field(default_factory=list)

    derived = capture.payload_fields(WithMoreRisks)
    assert set(derived) == {*PAYLOAD, "more_risks"}
    kind, default = derived["more_risks"]
    assert kind == list[capture.SECTION_INPUTS[Risk]] and default.default_factory is list


def _input_view(value: Any, model: type[BaseModel]) -> Any:
    """``value`` (a record section as JSON) cut to the fields ``model`` accepts."""
    if isinstance(value, list):
        return [_input_view(item, model) for item in value]
    return {key: item for key, item in value.items() if key in model.model_fields}


def _given(value: Any, like: Any) -> Any:
    """``value`` cut to the keys ``like`` has, at every depth (the record adds defaults the payload left out)."""
    if isinstance(like, list):
        return [_given(item, shape) for item, shape in zip(value, like, strict=True)]
    if isinstance(like, dict):
        return {key: _given(value[key], shape) for key, shape in like.items()}
    return value


def test_a_real_records_sections_go_back_through_capture_unchanged(tmp_path: Path) -> None:
    """Every section of a real record (a benchmark run's handoff), cut to what its input model accepts, is a
    valid payload section and lands in the same record section unchanged."""
    written = json.loads(REAL_RECORD.read_text(encoding="utf-8"))
    inputs = {name: _part(field.annotation)[0] for name, field in PAYLOAD.items()}
    payload = {name: _input_view(written[name], model) for name, model in inputs.items()}
    record, _ = capture.build_draft(payload, tmp_path)
    again = record.to_json_dict()
    for name, model in inputs.items():
        assert _given(again[name], payload[name]) == payload[name], name
