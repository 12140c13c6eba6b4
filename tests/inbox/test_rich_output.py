# rich_output.py's capture (_lsb_rich_install): representations, bounds, matplotlib figures.
import base64
import json
import sys

import pytest

from conftest import load, text


@pytest.fixture
def rich():
    saved = list(sys.meta_path)
    r = load('rich_output.py')._lsb_rich_install(3, 4000)
    yield r
    sys.meta_path[:] = saved  # its import hook goes again


class Html:
    def _repr_html_(self):
        return '<b>x</b>'

    def __repr__(self):
        return 'Html()'


def test_display_takes_the_richest_representations(rich):
    rich.display(Html())
    rich.display(None)
    assert [json.loads(e) for e in rich.take()] == [{'text/html': '<b>x</b>', 'text/plain': 'Html()'}]
    assert rich.take() == []


def test_entries_are_bounded_in_count_and_size(rich):
    rich.display('y' * 5000)
    for i in range(5):
        rich.display(i)
    got = [json.loads(e) for e in rich.take()]
    assert got[0]['error'].startswith('an output (text/plain) is ')
    assert got[0]['error'].endswith(' bytes; the limit is 4000')
    assert got[1:3] == [{'text/plain': '0'}, {'text/plain': '1'}]
    assert got[3] == {'error': 'more than 3 outputs; the rest are not returned'}
    assert len(got) == 4


def test_a_failing_repr_is_an_error_entry(rich):
    class Bad:
        def _repr_svg_(self):
            raise ValueError('no')
    rich.display(Bad())
    got = [json.loads(e) for e in rich.take()]
    assert got[0] == {'error': '_repr_svg_() raised ValueError: no'}


def test_open_matplotlib_figures_become_pngs():
    pytest.importorskip('matplotlib')
    saved = list(sys.meta_path)
    try:
        r = load('rich_output.py')._lsb_rich_install(16, 4 << 20)
        import matplotlib.pyplot as plt
        plt.plot([1, 2, 3])
        plt.show()  # patched: renders the open figures into the entries
        got = [json.loads(e) for e in r.take()]
        assert len(got) == 1
        assert base64.b64decode(got[0]['image/png']).startswith(b'\x89PNG')
        assert plt.get_fignums() == []
    finally:
        sys.meta_path[:] = saved


def test_texts_carried_in_the_prelude_hold_no_triple_quote():
    # The one-shot prelude wraps them in r'''...''' (rich_output_source.cc).
    assert "'''" not in text('rich_output.py') + text('one_shot_stage.py')
