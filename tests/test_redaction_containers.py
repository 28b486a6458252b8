"""Redaction of values shown to the model when the value holds secrets inside it.

A pre-check or validation error about a list, an object or a union (`maxItems`, a type
mismatch, `oneOf`) shows the whole value; a coercion that unwraps or parses a container shows
it too. Secret fields inside must stay hidden, and the redaction hook must see every value at
its own JSON Pointer, exactly as it does for a scalar error.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from toolwire import Assembler, ToolCall, Toolset, tool_messages


def call(tools: Toolset, name: str, arguments: str, *, precheck: bool) -> ToolCall:
    asm = Assembler(tools=tools) if precheck else Assembler()
    asm.feed(0, id="call_1", name=name, arguments=arguments)
    (done,) = asm.finish()
    return done


class Vault(BaseModel):
    """Store keys."""

    keys: list[SecretStr] = Field(default=[], max_length=2)
    env: dict[str, SecretStr] = {}
    label: str = ""


PLAIN = {
    "type": "function",
    "function": {
        "name": "connect",
        "parameters": {
            "type": "object",
            "properties": {
                "tokens": {
                    "type": "array",
                    "maxItems": 1,
                    "items": {"type": "string", "format": "password"},
                },
                "auth": {
                    "type": "object",
                    "properties": {"token": {"type": "string", "x-secret": True}},
                    "required": ["token"],
                },
            },
        },
    },
}


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("vault", '{"keys": ["sk-live-1111", "sk-live-2222", "sk-live-3333"]}'),
        ("vault", '{"keys": "sk-live-1111"}'),
        ("vault", '{"env": "sk-live-1111"}'),
        ("vault", '{"env": ["sk-live-1111"]}'),
        ("connect", '{"tokens": ["sk-live-1111", "sk-live-2222"]}'),
        ("connect", '{"auth": ["sk-live-1111"]}'),
        ("connect", '{"auth": "sk-live-1111"}'),
    ],
)
def test_secrets_inside_a_shown_value_are_redacted(
    tool: str, arguments: str, precheck: bool
) -> None:
    toolset = Toolset([Vault, PLAIN])
    done = call(toolset, tool, arguments, precheck=precheck)
    outcome = toolset.validate(done)
    assert not outcome.ok and outcome.errors
    shown = json.dumps(tool_messages([done], [outcome])) + repr(outcome.errors)
    assert "sk-live" not in shown


def test_secret_items_are_redacted_one_by_one() -> None:
    toolset = Toolset([Vault])
    done = call(toolset, "vault", '{"keys": ["a1", "b2", "c3"]}', precheck=True)
    (error,) = toolset.validate(done).errors
    assert error.path == "/keys"
    assert error.got == '["[redacted]","[redacted]","[redacted]"]'


@pytest.mark.parametrize("precheck", [True, False])
def test_redaction_hook_sees_values_inside_a_shown_object(precheck: bool) -> None:
    seen: list[str] = []

    def redact(path: str, text: str) -> str:
        seen.append(path)
        return '"****"' if path == "/card/number" else text

    pay = {
        "name": "pay",
        "parameters": {
            "type": "object",
            "properties": {
                "card": {
                    "type": "object",
                    "properties": {"number": {"type": "string"}, "holder": {"type": "string"}},
                    "maxProperties": 1,
                }
            },
        },
    }
    toolset = Toolset([pay], redact=redact)
    arguments = '{"card": {"number": "4111111111111111", "holder": "Ann"}}'
    done = call(toolset, "pay", arguments, precheck=precheck)
    outcome = toolset.validate(done)
    (error,) = outcome.errors
    assert error.path == "/card"
    assert "4111" not in json.dumps(tool_messages([done], [outcome]))
    assert error.got == '{"number":"****","holder":"Ann"}'
    assert "/card/number" in seen


@pytest.mark.parametrize("precheck", [True, False])
def test_unwrapped_arguments_keep_secrets_out_of_coercions(precheck: bool) -> None:
    class Login(BaseModel):
        """Log in."""

        user: str
        password: SecretStr

    toolset = Toolset([Login])
    arguments = '{"params": {"user": "ann", "password": "hunter2-secret"}}'
    done = call(toolset, "login", arguments, precheck=precheck)
    outcome = toolset.validate(done)
    assert outcome.ok
    (coercion,) = outcome.coercions
    assert coercion.rule == "unwrap"
    assert "hunter2" not in coercion.from_ + coercion.to
    assert '"user":"ann"' in coercion.to


def test_json_string_object_with_secret_inside_is_not_shown() -> None:
    class Auth(BaseModel):
        token: SecretStr
        scope: str

    class Connect(BaseModel):
        """Connect."""

        auth: Auth

    toolset = Toolset([Connect])
    arguments = json.dumps({"auth": json.dumps({"token": "tok-secret-9", "scope": "read"})})
    outcome = toolset.validate(call(toolset, "connect", arguments, precheck=False))
    assert outcome.ok
    (coercion,) = outcome.coercions
    assert coercion.rule == "json_string"
    assert "tok-secret-9" not in coercion.from_ + coercion.to


class Pins(BaseModel):
    pins: list[Annotated[int, Field(json_schema_extra={"x-secret": True})]] = []
    codes: dict[str, list[Annotated[int, Field(json_schema_extra={"x-secret": True})]]] = {}


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"pins": ["12.5"]}', "/pins/0"),  # refused: fractional_integer
        ('{"pins": [1, true]}', "/pins/1"),  # a type error (the pre-check's, with it)
        ('{"codes": {"a": [1, "2.5"]}}', "/codes/a/1"),
    ],
)
def test_secret_array_items_stay_hidden_in_errors(
    arguments: str, path: str, precheck: bool
) -> None:
    # JSON Pointers spell array indices as text: the secret item must still be found.
    tools = Toolset([Pins])
    outcome = tools.validate(call(tools, "pins", arguments, precheck=precheck))
    assert not outcome.ok
    (error,) = outcome.errors
    assert error.path == path and error.got == "[redacted]"
    assert error.expected == "an integer"


def test_secret_array_items_stay_hidden_in_coercions() -> None:
    tools = Toolset([Pins])
    outcome = tools.validate(call(tools, "pins", '{"pins": ["1234"]}', precheck=True))
    assert outcome.ok
    (coercion,) = outcome.coercions
    assert coercion.path == "/pins/0"
    assert (coercion.from_, coercion.to) == ("[redacted]", "[redacted]")


SECRET = "sk-live-9999"
_SECRET_FIELD = {"type": "string", "x-secret": True}
# Every place besides `properties`, `items` and unions where a schema can declare a field: a
# secret declared there is as secret as one declared directly.
SECRET_SHAPES = {
    "allOf": {"allOf": [{"type": "object", "properties": {"k": _SECRET_FIELD}}]},
    "nested allOf": {
        "allOf": [{"allOf": [{"type": "object", "properties": {"k": _SECRET_FIELD}}]}]
    },
    "patternProperties": {"type": "object", "patternProperties": {"^k": _SECRET_FIELD}},
    "then": {
        "type": "object",
        "if": {"required": ["k"]},
        "then": {"properties": {"k": _SECRET_FIELD}},
    },
    "else": {
        "type": "object",
        "if": {"required": ["z"]},
        "else": {"properties": {"k": _SECRET_FIELD}},
    },
    "dependentSchemas": {
        "type": "object",
        "dependentSchemas": {"k": {"properties": {"k": _SECRET_FIELD}}},
    },
}


def _shape_tool(shape: dict[str, object]) -> Toolset:
    params = {
        "type": "object",
        "properties": {"cred": shape, "n": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["cred"],
    }
    return Toolset([{"name": "connect", "parameters": params}], strict=False)


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize("shape", list(SECRET_SHAPES))
@pytest.mark.parametrize(
    "arguments",
    [
        {"cred": [{"k": SECRET}]},  # the container is shown in a type error
        {"cred": {"k": SECRET}, "n": "many"},  # an error next to it
        {"input": {"cred": {"k": SECRET}, "n": 1}},  # an unwrap coercion shows everything
        {"cred": json.dumps({"k": SECRET})},  # a JSON-string coercion shows the text
        {"cred": SECRET},  # a scalar where an object holding secrets belongs
    ],
)
def test_a_secret_declared_anywhere_in_the_schema_is_redacted(
    shape: str, arguments: dict[str, object], precheck: bool
) -> None:
    tools = _shape_tool(SECRET_SHAPES[shape])
    done = call(tools, "connect", json.dumps(arguments), precheck=precheck)
    outcome = tools.validate(done)
    shown = [c.from_ + c.to for c in outcome.coercions]
    if not outcome.ok:
        shown.append(json.dumps(outcome.to_message(done)))
    if done.error is not None:
        shown.append(done.error.got or "")
    assert shown, "every case shows the value somewhere"
    assert not any(SECRET in text for text in shown), shown


def test_values_next_to_a_secret_in_an_all_of_member_stay_visible() -> None:
    shape = {
        "allOf": [
            {"type": "object", "properties": {"user": {"type": "string"}}},
            {"type": "object", "properties": {"k": _SECRET_FIELD}},
        ]
    }
    tools = _shape_tool(shape)
    done = call(tools, "connect", json.dumps({"cred": {"user": 5, "k": SECRET}}), precheck=False)
    (error,) = tools.validate(done).errors
    assert (error.path, error.got) == ("/cred/user", "5")
    wrapped = {"input": {"cred": {"user": "bob", "k": SECRET}}}
    done = call(tools, "connect", json.dumps(wrapped), precheck=False)
    (coercion,) = tools.validate(done).coercions
    assert json.loads(coercion.to) == {"cred": {"user": "bob", "k": "[redacted]"}}


@pytest.mark.parametrize("shape", list(SECRET_SHAPES))
def test_recordings_and_precheck_pointers_find_a_secret_declared_anywhere(shape: str) -> None:
    from toolwire.recorder import redact_arguments
    from toolwire.schema_export import secret_patterns

    schema = _shape_tool(SECRET_SHAPES[shape]).schema("connect")
    text = json.dumps({"cred": {"k": SECRET, "kz": SECRET}, "note": "visible"})
    redacted = json.loads(redact_arguments(text, schema))
    assert redacted["note"] == "visible"
    assert redacted["cred"]["k"] == "[redacted]"
    assert any(p in ("/cred/k", "/cred/*") for p in secret_patterns(schema))


class Tree(BaseModel):
    """A tree whose nodes refer to their own model three times."""

    value: int
    key: SecretStr | None = None
    left: Tree | None = None
    right: Tree | None = None
    kids: list[Tree] = []


class Plain(BaseModel):
    """A tree without secrets, whose nodes refer to their own model three times."""

    value: int
    left: Plain | None = None
    right: Plain | None = None
    kids: list[Plain] = []


@pytest.mark.parametrize("model", [Tree, Plain])
def test_a_recursive_model_is_searched_for_secrets_once_per_definition(
    model: type[BaseModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolwire import validation

    # Walked once per path, a model with three self-references takes 3**depth steps to find
    # that it holds no secret.
    steps = [0]
    original = validation.same_value

    def counted(node: dict[str, object]) -> object:
        steps[0] += 1
        if steps[0] > 5_000:
            raise RecursionError("the schema is walked once per path")
        return original(node)

    monkeypatch.setattr(validation, "same_value", counted)
    tools = Toolset([model], strict=False)
    name = model.__name__.lower()
    arguments = {"value": 1, "left": [{"value": 2, "key": SECRET}], "kids": "x"}
    done = call(tools, name, json.dumps(arguments), precheck=False)
    outcome = tools.validate(done)
    assert {e.path for e in outcome.errors} == {"/left", "/kids"}
    shown = json.dumps(outcome.to_message(done))
    # Where the schema declares the key secret it is hidden; elsewhere it is just text.
    assert (SECRET in shown) is (model is Plain)


def test_recordings_follow_references_to_find_secrets() -> None:
    from toolwire.recorder import redact_arguments, secret_pointers

    schema = Toolset([Tree], strict=False).schema("tree")
    nested = {"value": 1, "left": {"value": 2, "right": {"value": 3, "key": SECRET}}}
    redacted = json.loads(redact_arguments(json.dumps(nested), schema))
    assert redacted["left"]["right"]["key"] == "[redacted]"
    assert redacted["left"]["right"]["value"] == 3
    # Each self-reference is followed once: the recursion ends where it would repeat.
    assert secret_pointers(schema) == ["/key", "/left/key", "/right/key"]


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize("key", ["params", "extra", "credz"])
def test_an_object_under_an_unknown_key_next_to_secrets_keeps_them_hidden(
    key: str, precheck: bool
) -> None:
    cred = {"type": "object", "properties": {"api_key": _SECRET_FIELD}}
    auth = {
        "type": "object",
        "properties": {"cred": cred, "region": {"type": "string"}},
        "additionalProperties": False,
    }
    tools = Toolset(
        [{"name": "t", "parameters": {"type": "object", "properties": {"auth": auth}}}],
        strict=False,
    )
    # A wrapper around the object's own fields, an extra key beside them, a misspelt field.
    inner = {"cred": {"api_key": SECRET}} if key != "credz" else {"api_key": SECRET}
    done = call(tools, "t", json.dumps({"auth": {key: inner, "region": "eu"}}), precheck=precheck)
    outcome = tools.validate(done)
    assert [e.code for e in outcome.errors] == ["unknown_field"]
    assert SECRET not in json.dumps(outcome.to_message(done))


class Login(BaseModel):
    """Log in."""

    user: str
    password: SecretStr


@pytest.mark.parametrize("how", ["returned", "raised"])
def test_a_business_check_quoting_a_secret_does_not_show_it(how: str) -> None:
    from toolwire.validation import BusinessRuleError

    def check(login: Login) -> list[str]:
        reason = f"password {login.password.get_secret_value()} is expired for {login.user}"
        if how == "raised":
            raise BusinessRuleError(reason)
        return [reason]

    plain = {
        "name": "connect",
        "parameters": {"type": "object", "properties": {"token": _SECRET_FIELD}},
    }
    tools = Toolset(
        [Login, plain],
        strict=False,
        checks={"login": check, "connect": lambda args: [f"token {args['token']} revoked"]},
    )
    for name, arguments in (
        ("login", {"user": "bob", "password": SECRET}),
        ("connect", {"token": SECRET}),
    ):
        done = call(tools, name, json.dumps(arguments), precheck=True)
        outcome = tools.validate(done)
        assert outcome.kind == "business_error"
        shown = json.dumps(outcome.to_message(done))
        assert SECRET not in shown and "[redacted]" in shown
        # The rest of the reason stays as the check wrote it.
        assert ("for bob" in shown) is (name == "login")


class _Pin(BaseModel):
    """Unlock."""

    pin: int = Field(json_schema_extra={"x-secret": True})
    card: SecretStr = SecretStr("")


def test_secrets_in_a_tools_words_are_hidden_before_they_are_cut() -> None:
    from toolwire.execution import BusinessRuleError, Executor, NeedsClarification

    def refuse(args: _Pin) -> None:
        secret = args.card.get_secret_value()
        raise BusinessRuleError("x" * 480 + f" card {secret} declined, pin {args.pin}")

    def ask(args: _Pin) -> None:
        raise NeedsClarification(f"is {args.pin} right? " + "q" * 100_000, missing=["m" * 999] * 99)

    tools = Toolset([_Pin], strict=False)
    done = call(tools, "pin", json.dumps({"pin": 987654321, "card": SECRET}), precheck=True)
    outcome = tools.validate(done)
    assert outcome.ok
    for tool in (refuse, ask):
        content = Executor({"pin": tool}, breaker=False).execute(outcome).content()
        assert "987654321" not in content and SECRET[:10] not in content
        assert len(content) < 8_000


def test_a_check_quoting_a_secret_number_does_not_show_it() -> None:
    tool = {
        "name": "unlock",
        "parameters": {
            "type": "object",
            "properties": {"pin": {"type": "integer", "x-secret": True}},
        },
    }
    tools = Toolset([tool], strict=False, checks={"unlock": lambda a: f"pin {a['pin']} is wrong"})
    done = call(tools, "unlock", '{"pin": 987654321}', precheck=False)
    shown = json.dumps(tools.validate(done).to_message(done))
    assert "987654321" not in shown and "pin [redacted] is wrong" in shown


def test_reasons_that_are_not_text_still_answer_the_call() -> None:
    from toolwire.validation import BusinessRuleError

    class Coded(BusinessRuleError):
        def __init__(self, code: int) -> None:
            super().__init__(f"code {code}")
            self.reasons = [code]  # type: ignore[assignment]

    made = Assembler()
    made.feed(0, id="c0", name="t", arguments="{}")
    (done,) = made.finish()
    (message,) = tool_messages([done], [Coded(7)])
    assert json.loads(message["content"])["error_type"] == "business_rule"


_PLAIN_LOGIN = {
    "name": "login",
    "parameters": {
        "type": "object",
        "properties": {
            "user": {"type": "string"},
            "password": {"type": "string", "x-secret": True},
            "device": {
                "type": "object",
                "properties": {"pin": {"type": "integer", "x-secret": True}},
            },
        },
    },
}


@pytest.mark.parametrize("how", ["business_rule", "clarification", "exception"])
def test_a_plain_tools_words_do_not_show_its_secret_arguments(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from toolwire.execution import BusinessRuleError, Executor, NeedsClarification

    def login(args: dict[str, Any]) -> None:
        quoted = f"{args['user']}:{args['password']} pin {args['device']['pin']}"
        if how == "business_rule":
            raise BusinessRuleError(f"account {quoted} is locked")
        if how == "clarification":
            raise NeedsClarification(f"is {quoted} right?")
        raise ConnectionError(f"auth failed for {quoted}")

    tools = Toolset([_PLAIN_LOGIN], strict=False)
    arguments = {"user": "bob", "password": SECRET, "device": {"pin": 987654321}}
    done = call(tools, "login", json.dumps(arguments), precheck=True)
    outcome = tools.validate(done)
    assert outcome.ok
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        content = Executor({"login": login}, breaker=False).execute(outcome).content()
    for shown in (content, caplog.text):
        assert SECRET[:10] not in shown and "987654321" not in shown
    # The rest of the tool's words stay as it wrote them (an exception's only in the log).
    assert "bob:[redacted] pin [redacted]" in (caplog.text if how == "exception" else content)


class _Pins(BaseModel):
    """Unlock with one of several pins."""

    pins: list[Annotated[int, Field(json_schema_extra={"x-secret": True})]]


def test_a_model_tools_words_do_not_show_secrets_declared_on_its_items() -> None:
    from toolwire.execution import BusinessRuleError, Executor

    def unlock(args: _Pins) -> None:
        raise BusinessRuleError(f"pins {args.pins[0]} and {args.pins[1]} are both expired")

    tools = Toolset([_Pins], strict=False)
    done = call(tools, "pins", '{"pins": [987654321, 123456789]}', precheck=True)
    outcome = tools.validate(done)
    assert outcome.ok and len(outcome.secrets) == 2
    content = Executor({"pins": unlock}, breaker=False).execute(outcome).content()
    assert "987654321" not in content and "123456789" not in content
    assert "pins [redacted] and [redacted] are both expired" in content


def test_an_outcome_without_secrets_carries_none() -> None:
    class Note(BaseModel):
        text: str

    for tool in (Note, {"name": "note", "parameters": {"properties": {"text": {}}}}):
        tools = Toolset([tool], strict=False)
        outcome = tools.validate(call(tools, "note", '{"text": "hi"}', precheck=True))
        assert outcome.ok and outcome.secrets == ()


def test_a_plain_tools_password_format_is_hidden_in_the_precheck() -> None:
    # A plain tool's pre-check leaves `format` to validation, but the mark still says secret.
    tools = Toolset(
        [
            {
                "name": "login",
                "parameters": {
                    "type": "object",
                    "properties": {"pw": {"type": "string", "format": "password", "minLength": 30}},
                },
            }
        ]
    )
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="c1", name="login", arguments='{"pw": "hunter2"}')
    early = [error.got for _, error in assembler.drain_errors()]
    (call,) = assembler.finish()
    assert early == ["[redacted]"]
    assert call.error is not None and call.error.got == "[redacted]"
    assert "hunter2" not in repr(tools.registry.check("login", b'{"pw": "hunter2"}'))


class _Login(BaseModel):
    user: str
    password: SecretStr

    @model_validator(mode="after")
    def _not_expired(self) -> _Login:
        if self.user == "old":
            raise ValueError(f"password {self.password.get_secret_value()} is expired")
        return self


@pytest.mark.parametrize("precheck", [False, True])
def test_a_secret_value_quoted_elsewhere_in_an_error_is_hidden(precheck: bool) -> None:
    # A validator's message quoting the secret, and the secret sent again under an unknown key,
    # are not the secret field itself, whose own redaction missed them.
    tools = Toolset([_Login])
    for arguments in (
        '{"user": "old", "password": "hunter2XYZ"}',
        '{"user": "new", "password": "hunter2XYZ", "pw": "hunter2XYZ"}',
    ):
        outcome = tools.validate(call(tools, "login", arguments, precheck=precheck))
        assert not outcome.ok and outcome.errors
        [message] = tool_messages([call(tools, "login", arguments, precheck=precheck)], [outcome])
        assert "hunter2XYZ" not in json.dumps(message), message
        assert "hunter2XYZ" not in repr(outcome.errors)


class _Charge(BaseModel):
    amount_cents: int
    api_key: SecretStr

    @model_validator(mode="after")
    def _positive(self) -> _Charge:
        if self.amount_cents <= 0:
            raise ValueError(
                "amount_cents must be a positive number of cents; the merchant account"
                " configured for this charge (see the billing dashboard for its limits and"
                f" currency) was api key {self.api_key.get_secret_value()}"
            )
        return self


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize("key", ["sk_live_51HqLyjWDarjtT1zdp7dcXAMPLEKEYxyz", "sk_1"])
def test_a_secret_cut_off_by_the_length_limit_of_a_message_is_hidden(
    precheck: bool, key: str
) -> None:
    # The validator's message runs past the 200 characters an error shows, and the cut fell
    # inside the key: the part left no longer matched the whole key and was shown.
    tools = Toolset([_Charge])
    arguments = json.dumps({"amount_cents": 0, "api_key": key})
    outcome = tools.validate(call(tools, "charge", arguments, precheck=precheck))
    [error] = outcome.errors
    assert error.hint is not None and error.hint.endswith(("[redacted]", "[redacted]…"))
    [message] = tool_messages([call(tools, "charge", arguments, precheck=precheck)], [outcome])
    assert key[:8] not in json.dumps(message) and key[:8] not in repr(outcome)


@pydantic_dataclass
class _Creds:
    token: SecretStr


class _FetchReport(BaseModel):
    """Fetch a report with credentials held in a dataclass and a set."""

    creds: _Creds
    spare: frozenset[SecretStr] = frozenset()


def test_secrets_inside_dataclasses_and_sets_are_known_and_hidden(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from toolwire.execution import Executor

    def fetch_report(args: _FetchReport) -> None:
        (spare,) = args.spare
        token = args.creds.token.get_secret_value()
        raise ConnectionError(f"GET https://x/?key={token}&spare={spare.get_secret_value()}")

    tools = Toolset([_FetchReport])
    arguments = {"creds": {"token": "sk-live-4444"}, "spare": ["sk-live-5555"]}
    outcome = tools.validate(call(tools, "fetch_report", json.dumps(arguments), precheck=True))
    assert outcome.ok
    assert sorted(s.get_secret_value() for s in outcome.secrets) == ["sk-live-4444", "sk-live-5555"]
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        content = Executor({"fetch_report": fetch_report}, breaker=False).execute(outcome).content()
    assert "sk-live" not in content and "sk-live" not in caplog.text
    assert "key=[redacted]" in caplog.text


def test_a_short_secret_is_hidden_where_it_stands_alone_not_inside_other_words() -> None:
    unlock = {
        "name": "unlock",
        "parameters": {
            "type": "object",
            "properties": {
                "door": {"type": "string"},
                "pin": {"type": "integer", "x-secret": True},
                "code": {"type": "string", "minLength": 10, "x-secret": True},
            },
            "required": ["door", "pin", "code"],
        },
    }
    tools = Toolset([unlock], strict=False)
    arguments = '{"door": "d1", "pin": 1, "code": "SHORTSEC"}'
    outcome = tools.validate(call(tools, "unlock", arguments, precheck=True))
    shown = json.dumps(tool_messages([call(tools, "unlock", arguments, precheck=True)], [outcome]))
    # "at least 10" keeps its digits: a `1` replaced inside it would mangle the words and, by
    # the gap, show the PIN.
    assert "at least 10 characters" in shown and "[redacted]0" not in shown
    assert "SHORTSEC" not in shown

    from toolwire.validation import without_values

    assert without_values("pin 1 is wrong; at least 10; x1y; key=1&b", ["1"]) == (
        "pin [redacted] is wrong; at least 10; x1y; key=[redacted]&b"
    )
    assert (
        without_values("Bearer abcsk-live-9999xyz", ["sk-live-9999"]) == "Bearer abc[redacted]xyz"
    )


class _Connect(BaseModel):
    token: SecretStr = Field(json_schema_extra={"pattern": "^tok_[a-z0-9]{8}$"})
    mode: str = Field(json_schema_extra={"x-secret": True, "enum": ["a", "b"]})


@pytest.mark.parametrize("precheck", [False, True])
def test_a_short_secret_leaves_the_schemas_words_whole(precheck: bool) -> None:
    # The secret "a" stands alone in "a string matching ^tok_[a-z0-9]{8}$", which is the
    # schema's wording, not the model's input: only what quotes the input is redacted.
    tools = Toolset([_Connect])
    arguments = '{"token": "tok_LEAKED-SECRET", "mode": "a"}'
    outcome = tools.validate(call(tools, "connect", arguments, precheck=precheck))
    (error,) = outcome.errors
    assert (error.path, error.got) == ("/token", "[redacted]")
    assert error.expected == "a string matching ^tok_[a-z0-9]{8}$"
    assert "LEAKED" not in repr(outcome.errors)


def test_secrets_of_mutually_recursive_definitions_are_found_in_linear_time() -> None:
    # An expression language of twelve kinds that hold each other, one of which carries a
    # token: found where it is, and where that kind can come back (anywhere below a kind on
    # its cycle) the whole value counts. Entered on every path, the definitions took
    # exponential time, and `Assembler(tools=...)` did not return.
    from toolwire.schema_export import secret_patterns

    kinds = 12
    defs: dict[str, Any] = {"Expr": {"anyOf": [{"$ref": f"#/$defs/N{i}"} for i in range(kinds)]}}
    for i in range(kinds):
        props: dict[str, Any] = {
            "op": {"const": f"op{i}"},
            "args": {"type": "array", "items": {"$ref": "#/$defs/Expr"}},
            "left": {"$ref": f"#/$defs/N{(i + 1) % kinds}"},
        }
        if i == 5:
            props["token"] = {"type": "string", "x-secret": True}
        defs[f"N{i}"] = {"type": "object", "properties": props}
    schema = {
        "type": "object",
        "properties": {
            "filter": {"$ref": "#/$defs/Expr"},
            "plain": {"$ref": "#/$defs/Leaf"},
        },
        "$defs": {**defs, "Leaf": {"type": "object", "properties": {"x": {"type": "string"}}}},
    }
    patterns = secret_patterns(schema)
    assert "/filter/token" in patterns
    assert not any(p.startswith("/plain") for p in patterns)
    tools = Toolset([{"name": "q", "parameters": schema}])
    for bad in [False, True]:
        asm = Assembler(tools=tools)
        value = {"filter": {"op": "op5", "token": SECRET, "args": []}, "plain": {"x": "a"}}
        if bad:
            value["filter"]["args"] = [{"op": "op6", "left": {"op": "op7", "token": SECRET}}]
        asm.feed(0, id="c1", name="q", arguments=json.dumps(value))
        (done,) = asm.finish()
        assert (done.error is not None) is bad
        outcome = tools.validate(done)
        assert outcome.ok is not bad
        assert SECRET not in repr(done.error) + repr(outcome.errors) + str(outcome.message)


class _Session(BaseModel):
    token: SecretStr
    note: str


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize("key", ["sk-live-9999", "sk/live~9999", "x_sk-live-9999"])
def test_a_secret_sent_again_as_a_key_is_hidden_in_paths(
    precheck: bool, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A value is hidden wherever an error quotes it; a key the model made up of the secret
    # (a slip, or a prompt injection's echo) went back whole in the error's path.
    import logging

    from toolwire.execution import Executor

    tools = Toolset([_Session])
    token = "sk/live~9999" if "/" in key else "sk-live-9999"
    done = call(tools, "session", json.dumps({"token": token, key: 1}), precheck=precheck)
    outcome = tools.validate(done)
    assert [(e.path, e.code) for e in outcome.errors] == [
        ("/note", "missing"),
        ("/x_[redacted]" if key.startswith("x_") else "/[redacted]", "unknown_field"),
    ]
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        executed = Executor({"session": lambda args: None}, breaker=False).execute(outcome)
    shown = [
        json.dumps(outcome.to_message(done)),
        json.dumps(tool_messages([done], [outcome])),
        repr(outcome),
        executed.content(),
        caplog.text,
    ]
    for text in shown:
        assert "9999" not in text


class _Tagged(BaseModel):
    token: SecretStr
    counts: dict[str, int] = {}


@pytest.mark.parametrize("precheck", [True, False])
def test_a_secret_sent_again_as_a_key_is_hidden_in_coercion_paths(precheck: bool) -> None:
    # A coercion under the key is reported by its path, as an error is: the key is hidden
    # there too, while the validated model keeps the data the model sent.
    tools = Toolset([_Tagged])
    arguments = {"token": "sk-live-9999", "counts": {"sk-live-9999": "5", "b": "6"}}
    outcome = tools.validate(call(tools, "tagged", json.dumps(arguments), precheck=precheck))
    assert outcome.ok and isinstance(outcome.model, _Tagged)
    assert outcome.model.counts == {"sk-live-9999": 5, "b": 6}
    assert [c.path for c in outcome.coercions] == ["/counts/[redacted]", "/counts/b"]
    assert "9999" not in repr(outcome.coercions)
