"""``ProviderError.retry_after``: the seconds a provider asked to wait before trying again,
read from its ``Retry-After`` (or ``retry-after-ms``) by ``providers/_common.retry_after``.
The clients' own tests check that each of them fills it from a real error response."""

from __future__ import annotations

import datetime
import pickle
from email.utils import format_datetime

from llm_worker import ProviderError
from llm_worker.providers._common import retry_after


def test_the_forms_a_provider_uses():
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
    assert retry_after({"retry-after": "12"}) == 12.0
    assert retry_after({"retry-after": "0.5"}) == 0.5
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert 25 < (retry_after({"retry-after": format_datetime(later)}) or 0) <= 30
    assert retry_after({"retry-after": "-3"}) == 0.0  # past: no wait
    for nonsense in ("soon", "", "nan", "inf"):
        assert retry_after({"retry-after": nonsense}) is None
    assert retry_after({}) is None
    assert retry_after(None) is None


def test_a_provider_error_keeps_it_through_pickle():
    error = ProviderError("openai", "slow down", status=429, retryable=True, retry_after=2.5)
    loaded = pickle.loads(pickle.dumps(error))
    assert (loaded.status, loaded.retryable, loaded.retry_after) == (429, True, 2.5)
    assert str(loaded) == str(error)
    assert ProviderError("openai", "x").retry_after is None
