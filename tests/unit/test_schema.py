import pytest

from dialeval.schema import InputError, Turn, normalize_dialogues, normalize_items


def test_three_context_forms_normalise_to_turns():
    items = normalize_items(
        contexts=[
            "hello there",
            ["hi", "how are you?"],
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}],
            [{"speaker": "A", "text": "yo"}],
        ],
        responses=["a", "b", "c", "d"],
    )
    assert items[0].context == (Turn("hello there"),)
    assert items[1].context == (Turn("hi"), Turn("how are you?"))
    assert items[2].context == (Turn("hi", "user"), Turn("hey", "assistant"))
    assert items[3].context == (Turn("yo", "A"),)
    assert [i.response for i in items] == ["a", "b", "c", "d"]
    assert items[1].context_text == "hi how are you?"


def test_references_one_or_several_per_item():
    items = normalize_items(["c1", "c2"], ["r1", "r2"], references=["x", ["y", "z"]])
    assert items[0].references == ("x",)
    assert items[1].references == ("y", "z")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(contexts=["a", "b"], responses=["x"]), "contexts has 2 items but responses has 1"),
        (dict(contexts=["a"], responses=[""]), "responses[0] is empty"),
        (dict(contexts=["a", "b"], responses=["x", None]), "responses[1] is None"),
        (dict(contexts=["a"], responses=[3]), "responses[0] has type int"),
        (dict(contexts=[None], responses=["x"]), "contexts[0] is None"),
        (dict(contexts=[["ok", "  "]], responses=["x"]), "contexts[0][1] is empty"),
        (dict(contexts=[[]], responses=["x"]), "contexts[0] is an empty list"),
        (dict(contexts=[[{"role": "user"}]], responses=["x"]), "contexts[0][0] has no 'content'"),
        (dict(contexts=[[{"foo": 1}]], responses=["x"]), "contexts[0][0] is a mapping without 'content'"),
        (dict(contexts=[{"role": "u", "content": "c"}], responses=["x"]), "contexts[0] has type dict"),
        (dict(contexts="abc", responses=["x"]), "contexts has type str"),
        (dict(contexts=["a"], responses=["x"], references=[[]]), "references[0] is an empty list"),
        (dict(contexts=["a"], responses=["x"], references=[["ok", None]]), "references[0][1] is None"),
        (dict(contexts=["a"], responses=["x"], references=["r", "s"]), "references has 2 items"),
    ],
)
def test_bad_input_names_index_and_field(kwargs, message):
    with pytest.raises(InputError) as err:
        normalize_items(**kwargs)
    assert message in str(err.value)


def test_order_and_duplicates_are_kept():
    contexts = ["same"] * 3 + ["other"]
    responses = ["3", "1", "2", "1"]
    items = normalize_items(contexts, responses)
    assert [i.response for i in items] == responses
    assert len(items) == 4


def test_non_ascii_is_accepted_verbatim():
    items = normalize_items(["¿Qué tal? 你好 🙂"], ["très bien"])
    assert items[0].context[0].text == "¿Qué tal? 你好 🙂"


def test_dialogues_validation():
    d = normalize_dialogues([[{"role": "user", "content": "hi"}, {"role": "bot", "content": "hello"}]], min_turns=2)
    assert d[0].speakers == ("user", "bot")
    with pytest.raises(InputError, match=r"dialogues\[0\] has 1 turn"):
        normalize_dialogues([["only one"]], min_turns=2)
    with pytest.raises(InputError, match=r"dialogues\[1\] is a string"):
        normalize_dialogues([["a", "b"], "not a list"])
    with pytest.raises(InputError, match=r"dialogues\[0\]\[1\]\.content has type int"):
        normalize_dialogues([[{"role": "a", "content": "x"}, {"role": "b", "content": 5}]])


def test_error_family_keeps_the_builtin_bases():
    import dialeval
    from dialeval import errors, paths

    assert InputError is dialeval.InputError is errors.InputError
    assert issubclass(InputError, ValueError) and issubclass(InputError, errors.DialevalError)
    assert issubclass(errors.CheckpointNotFoundError, FileNotFoundError)
    assert paths.DataDirNotFound is errors.DataDirNotFound and issubclass(paths.DataDirNotFound, FileNotFoundError)
    unknown = errors.UnknownNameError("metric", "grad", ["grade", "pone"])
    assert isinstance(unknown, KeyError)
    assert str(unknown) == "unknown metric 'grad'; did you mean 'grade'? (choices: grade, pone)"  # no KeyError quotes
    assert "did you mean" not in str(errors.UnknownNameError("metric", "zzz", ["grade", "pone"]))
