"""Every TP-TOK rule fires where it must and stays quiet where it must not (cases in cases_tokenizer.py)."""

from __future__ import annotations

import pytest

from tests.checks.cases import check_case
from tests.checks.cases_tokenizer import CASES, TokenizerCase
from tests.tokenizer import conftest as tokenizer_fixtures
from trainproof.commands import judge

pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")

built = tokenizer_fixtures.built  # the session's tokenizers, trained once at their first request

PARAMS = [pytest.param(rule_id, case, id=f"{rule_id}:{case.name}") for rule_id, cases in CASES.items() for case in cases]


@pytest.mark.parametrize(("rule_id", "case"), PARAMS)
def test_tokenizer_rule_case(built, tmp_path, rule_id: str, case: TokenizerCase) -> None:
    tokenizer = case.tokenizer(built, tmp_path)
    text = case.text(built, tokenizer, tmp_path)
    subject = judge("tokenizer", [str(text)], tokenizer=str(tokenizer), progress=False, **case.options).subjects[0]
    check_case(subject, rule_id, case.fires, case.level)
