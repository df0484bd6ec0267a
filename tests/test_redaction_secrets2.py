"""S3: classes of secrets (and of text that is none) found missing by the second independent set (issue 37,
tests/fixtures/independent/secrets2). Each test is about a class of input, checked through the rules alone and
through an import's record gates; each has text beside it that must stay as it is."""

from __future__ import annotations

import base64
import json

import pytest

from hindsight_batch.redaction.redactor import Findings, Redactor
from tests.adversarial import through_import

REDACTOR = Redactor(b"k")


def _both(text: str) -> tuple[str, str]:
    """``text`` redacted by the rules alone and through an import (its record gates, its JSON)."""
    return REDACTOR.redact_text(text, Findings()), through_import(REDACTOR, text)


def _assert_redacted(text: str, secret: str, kept: str) -> None:
    for out in _both(text):
        assert secret not in out, out
        assert kept in out, out


def _assert_kept(text: str) -> None:
    for out in _both(text):
        assert out == text, out


@pytest.mark.parametrize(("text", "secret", "kept"), [
    # A sentence's full stop after the value is the sentence's.
    ("the value of VOYAGE_API_KEY is pa-CJk0YBoSzxKehspRszxHqeXpri9a. It worked yesterday.",
     "pa-CJk0YBoSzxKehspRszxHqeXpri9a", ". It worked yesterday."),
    ("the token is Xk29vLpQ8rTz3mWnq7. Next step", "Xk29vLpQ8rTz3mWnq7", ". Next step"),
    # A call's closing bracket before an escaped newline of JSON text is the call's.
    ('{"text":"TOKEN = \\"AVUEBx1hdkxhpRpX4yDb9v2B0kA6biVc\\"\\nclient = Client(api_key=UPSTASH_TOKEN)\\n"}',
     "AVUEBx1hdkxhpRpX4yDb9v2B0kA6biVc", "client = Client(api_key=UPSTASH_TOKEN)\\n"),
])
def test_a_redaction_never_eats_past_the_value(text: str, secret: str, kept: str) -> None:
    _assert_redacted(text, secret, kept)


@pytest.mark.parametrize("text", [
    '{"text":"client = Client(api_key=UPSTASH_REDIS_REST_TOKEN)\\nprint(client)"}',
    "client = Client(api_key=ANTHROPIC_ADMIN_KEY)",
    "API_TOKEN=abc.def.",
])
def test_a_name_given_as_the_value_is_code(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), [
    # The password and token options of more tools, as their manuals give them.
    ("mosquitto_pub -h broker.local -u sensor -P 'Falcontundra0839$qOU' -t home/temp -m 21.5", "Falcontundra0839"),
    ("mosquitto_sub -h b -u s --pw Kp9vQz2Lm4x -t t", "Kp9vQz2Lm4x"),
    ("xfreerdp /v:10.0.0.5 /u:Administrator /p:'velvettundra47fYE' /cert:ignore", "velvettundra47fYE"),
    ("rabbitmqadmin -u admin -p 'zkda+hAgiQPsgHbW%88m' list queues", "zkda+hAgiQPsgHbW"),
    ("mc alias set minio http://localhost:9000 minioadmin 'YIEKVZDqOHFVk7wy3W'", "YIEKVZDqOHFVk7wy3W"),
    ("codecov upload-process -t 2vNG7yKplIEJtwGCqfqqn3rNaByE296B -f coverage.xml", "2vNG7yKplIEJtwGCqfqqn3rN"),
    ("ipmitool -I lanplus -H 10.0.0.9 -U admin -P Kp9vQz2Lm4 chassis status", "Kp9vQz2Lm4"),
    ("plink -ssh -pw Kp9vQz2Lm4 admin@host", "Kp9vQz2Lm4"),
    ("security add-generic-password -a me -s svc -w 'Kp9vQz2Lm4x'", "Kp9vQz2Lm4x"),
    ("htpasswd -nbB admin 'Kp9vQz2Lm4x'", "Kp9vQz2Lm4x"),
    ("net user bob Qz7Lm2Xp9Vk4 /add", "Qz7Lm2Xp9Vk4"),
    ("oc login -u developer -p Kp9vQz2Lm4x https://api.crc.testing:6443", "Kp9vQz2Lm4x"),
    ("cqlsh -u cassandra -p Kp9vQz2Lm4x 10.0.0.3", "Kp9vQz2Lm4x"),
    ("mysqlsh root:Kp9vQz2Lm4x@localhost:3306", "Kp9vQz2Lm4x"),
    ("isql -U sa -P Kp9vQz2Lm4xY -S MYSERVER", "Kp9vQz2Lm4xY"),
    ("hdbsql -n localhost:30015 -u SYSTEM -p Kp9vQz2Lm4xY \"select 1 from dummy\"", "Kp9vQz2Lm4xY"),
    ("racadm -r 10.0.0.8 -u root -p Kp9vQz2Lm4xY getsysinfo", "Kp9vQz2Lm4xY"),
    ("vmrun -T ws -gu admin -gp Kp9vQz2Lm4xY runProgramInGuest vm.vmx /bin/ls", "Kp9vQz2Lm4xY"),
    ("rpcclient -U 'admin%Kp9vQz2Lm4xY' 10.0.0.5", "Kp9vQz2Lm4xY"),
    ("pdftk in.pdf output out.pdf user_pw Kp9vQz2Lm4xY", "Kp9vQz2Lm4xY"),
    ("db2 connect to SAMPLE user db2inst1 using Kp9vQz2Lm4xY", "Kp9vQz2Lm4xY"),
    # Oracle's user/password@connect
    ("expdp system/TldwDWDpZKHw8XCvHcs8DR@XEPDB1 schemas=HR dumpfile=hr.dmp", "TldwDWDpZKHw8XCvHcs8DR"),
    ("sqlplus scott/OVwAX2iIsRtXNA9@//db.svc:1521/ORCLPDB1 @migrate.sql", "OVwAX2iIsRtXNA9"),
    ("rman target sys/Hq8vLz2pWx@prod", "Hq8vLz2pWx"),
    ("SQL> connect scott/Kp9vQz2Lm4x@orcl", "Kp9vQz2Lm4x"),
])
def test_a_password_option_of_a_common_tool_is_redacted(text: str, secret: str) -> None:
    for out in _both(text):
        assert secret not in out, out
        assert "[REDACTED:cli-password]" in out, out
    assert "@XEPDB1 schemas=HR" in _both(text)[0] or "XEPDB1" not in text  # the connect identifier stays


@pytest.mark.parametrize("text", [
    "sqlplus / as sysdba",
    "sqlplus -s /nolog @script.sql",
    "imp src/main.py",
    "exp data/file.dmp",
    "mysqlsh root@localhost:3306",
    "net user bob /delete",
    "security find-generic-password -s svc -w",
    "mosquitto_pub -h broker -P \"$MQTT_PASS\" -t t -m 1",
    "twine upload -u __token__ -p \"$PYPI_TOKEN\" dist/*",
    "fly deploy --remote-only",
    "isql -v mydsn",
    "db2 connect to SAMPLE",
    'tsql -S db -U sa -P "$SA_PASSWORD"',
    "the fly in the ointment -t is not a flag",
])
def test_a_tools_option_without_a_password_is_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), [
    # A value given in a longer sentence: set … to v, a few words then a copula, a few words then a colon.
    ("Noted. I set SCW_SECRET_KEY to 9311a679-d056-4073-9e85-6f483164301e, why 401?", "9311a679-d056-4073"),
    ("- I set RAILWAY_TOKEN to 4fee21ae-dda3-4b14-9356-8bc49ec2567e. It worked yesterday.", "4fee21ae-dda3"),
    ("here's the FASTLY_KEY I use locally: DuWwwmBlCbur017zF0UtcNTgPvANQ9Lb. It worked.", "DuWwwmBlCbur017z"),
    ("The wifi password at the office is emberriver974@6lr, in case you need it", "emberriver974@6lr"),
    ("The wifi password at the office is Lh65FKTuXstRwGhZZgt1BP, for the device test.", "Lh65FKTuXstRwGhZ"),
    ("the password for run 42 is Kp9vQz2Lm4xY", "Kp9vQz2Lm4xY"),
    ("I exported SCW_SECRET_KEY as 9311a679-d056-4073-9e85-6f483164301e before running it", "9311a679-d056"),
])
def test_a_value_given_in_a_longer_sentence_is_redacted(text: str, secret: str) -> None:
    for out in _both(text):
        assert secret not in out, out


@pytest.mark.parametrize("text", [
    "I'll pass the token 99f9a1b2c3d4e5f6 through to the next step.",
    "I passed the token to abc123def456ghi",  # "to" without a verb of setting
    "use the token as Kp9vQz2Lm4xYab",  # "as" without a verb of setting
    "store the password as a hash",
    "the key of the commit is 3f78a9b2c4d5e6f7a8b9",
    "secret rotation ticket KEEP-76d63156a4 is closed",
    "The token passed to the handler is req_8f7a6b5c4d3e2f1a",  # an id after words and a copula
    "the token budget we use: 4096 per call",
    "the token of the row id 42 is Kp9vQz2Lm4xY",  # the words name an id
])
def test_an_id_in_a_longer_sentence_is_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), [
    # A UUID under a private key's or a licence's name is the key (MongoDB Atlas's private API key).
    ("ATLAS_PRIVATE_KEY='c0a52c00-a64f-4bbf-9527-3c7c8854b711'", "c0a52c00-a64f-4bbf"),
    ('  mongodb_atlas_private_key: "fc5dde42-b22e-4cdf-864f-17e2aa8fc23b"', "fc5dde42-b22e-4cdf"),
    # Letters at random under an API secret's name (Vonage's sixteen characters).
    ('vonage_api_secret = "QeTFHjNlRIXqSaqy"', "QeTFHjNlRIXqSaqy"),
    ("VONAGE_API_SECRET=iUyghHBcEJtCskwM", "iUyghHBcEJtCskwM"),
])
def test_a_key_known_by_its_name_is_redacted(text: str, secret: str) -> None:
    for out in _both(text):
        assert secret not in out, out


@pytest.mark.parametrize("text", [
    '  private_key_id: "fc5dde42-b22e-4cdf-864f-17e2aa8fc23b"',
    '  cache_key: "fc5dde42-b22e-4cdf-864f-17e2aa8fc23b"',
    '  public_key: "fc5dde42-b22e-4cdf-864f-17e2aa8fc23b"',
    "client_secret=mySecretValue",
    "SECRET=SomeClassName",
    'secret_name = "ProductionDatabase"',
])
def test_an_id_or_a_name_under_a_keys_name_is_kept(text: str) -> None:
    _assert_kept(text)


_HAR = ('{{\n  "headers": [\n    {{\n      "name": "accept",\n      "value": "application/json"\n    }},\n'
        '    {{\n      "name": "{name}",\n      "value": "{value}"\n    }}\n  ]\n}}')


@pytest.mark.parametrize(("name", "value", "secret"), [
    ("Cookie", "session_id=B3A8Ne1PmZdZ1gUBdl03OqvOWqfsSzLEd-xY_clF; theme=dark", "B3A8Ne1PmZdZ1gUBdl03"),
    ("Authorization", "Token 8f7a6b5c4d3e2f1a0b9c8d7e", "8f7a6b5c4d3e2f1a0b9c8d7e"),
    ("x-auth-token", "IfUNmyCJuX-eYkHVXFpZbGEcKC_qdFVH", "IfUNmyCJuX-eYkHVX"),  # base64url with no digit
])
@pytest.mark.parametrize("form", ["file", "diff", "json"])
def test_a_header_given_as_a_name_and_a_value_is_redacted(name: str, value: str, secret: str, form: str) -> None:
    """A HAR capture's (or a Postman collection's) headers: the name in one field, the value in the next, also on a
    diff's + lines and in text that is JSON; what is no secret beside it stays."""
    text = _HAR.format(name=name, value=value)
    if form == "diff":
        text = "\n".join("+" + line for line in text.split("\n"))
    elif form == "json":
        text = '{"text":' + json.dumps(text) + "}"
    for out in _both(text):
        assert secret not in out, out
        assert "application/json" in out and "accept" in out, out
    if name == "Cookie":
        assert "theme=dark" in _both(text)[0]


@pytest.mark.parametrize("text", [
    _HAR.format(name="Cookie", value="theme=dark; lang=en"),
    _HAR.format(name="Authorization", value="Bearer {{token}}"),
    _HAR.format(name="user-agent", value="Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"),
    '{"name": "X-Api-Key-Header", "value": "X-Api-Key"}',
])
def test_a_header_pair_without_a_secret_is_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), [
    ('  proxy_set_header Authorization "Basic YWRtaW46TmltYnVzY29wcGVyMTkzblQ=";', "YWRtaW46TmltYnVzY29w"),
    ('10.1.2.3 - - "GET /api HTTP/1.1" 401 12 "-" "curl/8.5.0" auth="Basic ZGVwbG95Old0cWliVV5GVEhTeEJYeQ=="',
     "ZGVwbG95Old0cWliVV5G"),
])
def test_basic_credentials_anywhere_are_redacted(text: str, secret: str) -> None:
    """The base64 of user:password after "Basic", decoded to tell it from a word."""
    for out in _both(text):
        assert secret not in out and "[REDACTED:authorization-header]" in out, out


@pytest.mark.parametrize("text", [
    "Basic usage: run the tool",
    "Basic authentication is configured in nginx",
    "basic YWJjZGVmZ2hpams=",  # base64 of a word, no user:password
])
def test_basic_before_a_word_is_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize("text", [
    'API_KEY = ("ifdG6EjsfXYD957U3CFurVwdFw8rmnnc"\n           "cb6Qsb7QZdXn1gnFesOMG0LxXs2oEgEy")\ntimeout = 30',
    'const apiToken = "ifdG6EjsfXYD957U3CFurVwdFw8rmnnc" +\n    "cb6Qsb7QZdXn1gnFesOMG0LxXs2oEgEy";\ntimeout = 30',
    'SECRET_KEY = "ifdG6EjsfXYD957U3CFurVwdFw8rmnnc" \\\n    "cb6Qsb7QZdXn1gnFesOMG0LxXs2oEgEy"\ntimeout = 30',
    # on a diff's + lines, as a tool's output (text that is JSON)
    '{"text":"@@ -10,4 +10,6 @@\\n-        api_key=os.environ[\\"VENDOR_KEY\\"],\\n'
    '+        api_key=(\\"ifdG6EjsfXYD957U3CFurVwdFw8rmnnc\\"\\n'
    '+                 \\"cb6Qsb7QZdXn1gnFesOMG0LxXs2oEgEy\\"),\\n'
    '         timeout=30,\\n"}',
])
def test_a_secret_split_over_adjacent_literals_is_redacted_whole(text: str) -> None:
    for out in _both(text):
        assert "ifdG6EjsfXYD957U" not in out and "cb6Qsb7QZdXn1gnF" not in out, out
        assert "timeout" in out and out.count("[REDACTED:secret-assignment]") == 2, out


@pytest.mark.parametrize("text", [
    'token = ("abc" "def")',
    'log.info("token=%s", token)',
    'parts = ("ifdG6EjsfXYD957U3CFurVwdFw8rmnnc"\n         "cb6Qsb7QZdXn1gnFesOMG0LxXs2oEgEy")',  # no secret's name
])
def test_adjacent_literals_without_a_secret_are_kept(text: str) -> None:
    _assert_kept(text)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


_SERVICE_ACCOUNT = ('{\n  "type": "service_account",\n'
                    '  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
                    '-----END PRIVATE KEY-----\\n",\n  "client_email": "x@p.iam.gserviceaccount.com"\n}')


@pytest.mark.parametrize("text", [
    f"      - run: echo '{_b64(_SERVICE_ACCOUNT)}' | base64 -d > sa.json\n      - run: gcloud auth",
    f"echo '{_b64('postgres://app:Kp9vQz2Lm4xY@db:5432/app')}' | base64 --decode",
    f"creds = json.loads(base64.b64decode(\"{_b64(_SERVICE_ACCOUNT)}\"))",
    f"const sa = JSON.parse(Buffer.from('{_b64(_SERVICE_ACCOUNT)}', 'base64').toString());",
])
def test_base64_decoded_in_the_text_is_searched(text: str) -> None:
    """A text that decodes base64 (a CI step, b64decode, Buffer.from(…, 'base64')): each run is decoded and searched
    with every rule, and goes when it holds a secret."""
    for out in _both(text):
        assert "[REDACTED:base64-secret]" in out and _b64(_SERVICE_ACCOUNT)[:24] not in out, out


@pytest.mark.parametrize("text", [
    "cursor = base64.b64decode('" + _b64('{"offset": 100, "limit": 50}') + "')",
    f"echo '{_b64('hello world, nothing secret here')}' | base64 -d",
])
def test_base64_decoded_to_no_secret_is_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), [
    # A password in a sentence of more languages, in their scripts.
    ("Noted. รหัสผ่านของเซิร์ฟเวอร์คือ Q_gHlB31IsSJOi นะครับ", "Q_gHlB31IsSJOi"),
    ("A teszt szerver jelszava: hdYp4iYiLdfWdNT6gZAd, kérlek ne oszd meg.", "hdYp4iYiLdfWdNT6gZAd"),
    ("Ο κωδικός του διακομιστή είναι Xk29vLpQ8rTz3mWn", "Xk29vLpQ8rTz3mWn"),
    ("הסיסמה לשרת היא Xk29vLpQ8rTz3mWn", "Xk29vLpQ8rTz3mWn"),
    # a chosen password may begin with a symbol
    ("Das Kennwort für den Jenkins-Admin ist #FhMwzpsA64WY8MK#K6T – bitte ändern.", "FhMwzpsA64WY8MK"),
    # the value before the word
    ("- Use aA0ZFJWAy5a5U3GQ as the password for the admin account on staging.", "aA0ZFJWAy5a5U3GQ"),
])
def test_a_password_in_a_sentence_is_redacted(text: str, secret: str) -> None:
    for out in _both(text):
        assert secret not in out, out


@pytest.mark.parametrize("text", [
    "use the token as the api key for now",
    "Use 12345678 as the password length",
    "using foo_bar_baz as the token name",
    "Le parole sono importanti, ne ho contate 12345 in totale",
    "password: #ff00aa",
    "the password section #PasswordReset",
])
def test_a_sentence_about_a_password_is_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "secret", "kept"), [
    ("export LDAP_BIND_PASSWORD='5u1tIGW(;7XE7M6}'\\''^ygnM3b'\nexport PORT=8080", "ygnM3b", "export PORT=8080"),
    ("redis-cli -u 'rediss://default:%3DuMJz0ymw38dgjwjnjK@redis.svc:6380/0' --tls PING", "uMJz0ymw38dgjwjnjK",
     "@redis.svc:6380/0"),
])
def test_the_whole_value_goes_whatever_its_quoting(text: str, secret: str, kept: str) -> None:
    """A single quote inside a shell's single-quoted value ('…'\\''…'); a URL password whose first character is
    percent-encoded."""
    _assert_redacted(text, secret, kept)


def test_a_template_in_a_url_is_kept() -> None:
    _assert_kept("psql postgres://app:%DB_PASS%@db/app")


@pytest.mark.parametrize("text", [
    "the root password, in case you need it, is Kp9vQz2Lm4xY",
    "The password for the VPN has been reset to Kp9vQz2Lm4xY.",
    "the db password should be Kp9vQz2Lm4xY",
    "Password → Kp9vQz2Lm4xY",
    "password -> Kp9vQz2Lm4xY",
    "El password del servidor es Kp9vQz2Lm4xY",
    "password (for the admin user): Kp9vQz2Lm4xY",
    "cf auth admin Kp9vQz2Lm4xY",
    "poetry config http-basic.private bot Kp9vQz2Lm4xY",
])
def test_more_ways_of_giving_a_password_are_redacted(text: str) -> None:
    for out in _both(text):
        assert "Kp9vQz2Lm4xY" not in out, out


@pytest.mark.parametrize("text", [
    "the password on box1 is hidden",
    "the token should be 3fa9b2c1d4e5 for the test",  # an id after "should be"
    "$this->token->refresh()",
    "cf auth",
    "poetry config virtualenvs.in-project true",
])
def test_more_sentences_without_a_password_are_kept(text: str) -> None:
    _assert_kept(text)


@pytest.mark.parametrize(("text", "kept"), [
    ("Пароль для базы данных — Kp9vQz2Lm4xY, не теряй", ", не теряй"),
    ("Il codice di accesso è Kp9vQz2Lm4xY", "Il codice di accesso è "),
    ("Le mot de passe est « Kp9vQz2Lm4xY »", " »"),
    ("Das Passwort ist „Kp9vQz2Lm4xY“, bitte ändern", "“, bitte ändern"),
])
def test_a_password_after_a_dash_or_in_quotes_of_a_language_is_redacted(text: str, kept: str) -> None:
    _assert_redacted(text, "Kp9vQz2Lm4xY", kept)


def test_a_dash_in_a_sentence_about_a_password_keeps_its_words() -> None:
    _assert_kept("Пароль — это секрет, его нельзя хранить в коде")


@pytest.mark.parametrize(("text", "secret"), [
    ('r = requests.get(url, auth=("admin", "Kp9vQz2Lm4xY"))', "Kp9vQz2Lm4xY"),
    ('r = requests.get(url, auth=HTTPBasicAuth("admin", "Kp9vQz2Lm4xY"))', "Kp9vQz2Lm4xY"),
    ('url = "jdbc:oracle:thin:scott/Kp9vQz2Lm4xY@db.example.com:1521:ORCL"', "Kp9vQz2Lm4xY"),
    ('data, _ := base64.StdEncoding.DecodeString("cG9zdGdyZXM6Ly9hcHA6S3A5dlF6MkxtNHhZQGRiOjU0MzIvYXBw")',
     "cG9zdGdyZXM6Ly9hcHA6S3A5"),
    ('byte[] b = Base64.getDecoder().decode("cG9zdGdyZXM6Ly9hcHA6S3A5dlF6MkxtNHhZQGRiOjU0MzIvYXBw");',
     "cG9zdGdyZXM6Ly9hcHA6S3A5"),
])
def test_credentials_given_to_a_client_in_code_are_redacted(text: str, secret: str) -> None:
    for out in _both(text):
        assert secret not in out, out


@pytest.mark.parametrize("text", ['auth = ("admin", password)', "auth=(user, pw)", 'auth=("admin", "$PASSWORD")'])
def test_a_basic_auth_tuple_of_names_is_kept(text: str) -> None:
    _assert_kept(text)


def test_a_token_of_random_letters_with_a_dash_is_redacted() -> None:
    """A token that happens to hold no digit ("as-" and random letters) is no name of code."""
    for out in _both("modal_token_secret = as-RnrAJkNoxnWcOZECJuhSDd\nlog_level = debug"):
        assert "RnrAJkNoxnWcOZECJuhSDd" not in out and "log_level = debug" in out, out


@pytest.mark.parametrize("text", [
    "token = handleAuthenticationHTTPRequestError",
    "token = getUserIdFromDbByKeyJsAndUiAsMd",
    "token = myTokenValueForTheAPIClientXYZ",
])
def test_a_long_name_of_code_is_kept(text: str) -> None:
    _assert_kept(text)
