"""How a body read that fails is told: a timeout is a stalled transfer and a reset a cut one, on every supported
Python (``socket.timeout`` is ``TimeoutError`` only from 3.10 on); a failing sink is local trouble, raised as is."""

import errno
import socket

import pytest

from synclient.errors import TransferError
from synclient.transfer.http import _pump


class _Body:
    """A response whose reads fail with ``error`` (urllib3's copy path of _body_reader)."""

    def __init__(self, error: BaseException):
        self.error = error

    def read(self, amount, decode_content=False):
        raise self.error


def _pump_into(response, sink=lambda offset, data: None):
    return _pump(response, 0, 10, sink=sink, chunk_size=4, cancelled=lambda: False, where="https://s/x")


@pytest.mark.parametrize(
    "error, kind",
    [
        (socket.timeout("timed out"), "stalled"),
        (TimeoutError("timed out"), "stalled"),
        (ConnectionResetError(errno.ECONNRESET, "reset"), "cut"),
    ],
)
def test_a_read_that_times_out_or_is_reset_is_a_transfer_error(error, kind):
    with pytest.raises(TransferError, match=f"GET https://s/x: body {kind} at byte 0 of 10"):
        _pump_into(_Body(error))


def test_a_sink_that_fails_is_raised_as_it_is():
    class _Bytes:
        def read(self, amount, decode_content=False):
            return b"x" * amount

    def full(offset, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as caught:
        _pump_into(_Bytes(), sink=full)
    assert caught.value.errno == errno.ENOSPC and not isinstance(caught.value, TransferError)
