"""Schemathesis against the live server's OpenAPI schema: generated requests (valid and invalid)
never get a 5xx, and every answer conforms to the document: a declared status code, content
type and headers, and a body that matches the declared schema.

(Schemathesis's own pytest plugin does not run under pytest 9 yet, so this drives its
strategies directly: every operation, valid and invalid data, a bounded number of examples.)
"""
from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

EXAMPLES_PER_OPERATION_AND_MODE = 20
# A schema-valid compile request may still hold KIR with errors: 422 with diagnostics is the
# documented answer, so "valid data must be accepted with 2xx" does not apply to this API.
NOT_APPLICABLE = [positive_data_acceptance]


def test_generated_requests_conform_to_the_openapi_document(service):
    schema = schemathesis.openapi.from_url(service.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    failures: list[str] = []
    calls = 0
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=EXAMPLES_PER_OPERATION_AND_MODE, deadline=None, derandomize=True,
                      suppress_health_check=list(HealthCheck), database=None)
            def call(case):
                nonlocal calls
                response = case.call(base_url=service.url, timeout=30)
                calls += 1
                try:
                    case.validate_response(response, excluded_checks=NOT_APPLICABLE)
                except BaseExceptionGroup as group:  # schemathesis's FailureGroup: every failed check
                    failures.extend(f"{case.method} {case.formatted_path} -> {response.status_code} "
                                    f"{response.text[:200]!r}: {str(failure).splitlines()[0]}"
                                    for failure in group.exceptions)
            try:
                call()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # nothing to make invalid (no parameters, no body)
    assert len(operations) >= 7
    assert calls >= len(operations) * 2
    assert failures == []
