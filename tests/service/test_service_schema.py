"""Schemathesis against the live server's OpenAPI schema: generated requests never get a 5xx.

(Schemathesis's own pytest plugin does not run under pytest 9 yet, so this drives its
strategies directly: every operation, valid and invalid data, a bounded number of examples.)
"""
from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

EXAMPLES_PER_OPERATION_AND_MODE = 20


def test_generated_requests_get_no_server_error(service):
    schema = schemathesis.openapi.from_url(service.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    server_errors: list[str] = []
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
                if response.status_code >= 500:
                    server_errors.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                         f"{response.text[:200]} (body {str(case.body)[:200]})")
            try:
                call()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # nothing to make invalid (no parameters, no body)
    assert len(operations) >= 7
    assert calls >= len(operations) * 2
    assert server_errors == []
