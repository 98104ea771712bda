"""kraftlog's admin commands on a secured listener (issue 36): Kafka's client properties from
``--command-config`` (kraftlog.net.client_security), read as Kafka's tools read them, refused in one line when
kraftlog cannot use them, never showing a password."""

from __future__ import annotations

import pytest

from kraftlog.net.client_security import ClientSecurity, load_command_config

_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
         'password="s3cret;pw";')


def _config(tmp_path, text: str) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return str(path)


def test_kafkas_client_properties_give_the_protocol_mechanism_credentials_and_truststore(tmp_path):
    path = _config(tmp_path, f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={_JAAS}\n"
                             "ssl.truststore.type=PEM\nssl.truststore.location=/etc/ca.pem\nclient.id=x\n")
    got = load_command_config(path)
    assert got == ClientSecurity("SASL_SSL", "SCRAM-SHA-512", "alice", "s3cret;pw", "/etc/ca.pem", True)
    assert "s3cret" not in repr(got)
    librdkafka = load_command_config(_config(tmp_path, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                                                       "sasl.username=bob\nsasl.password=pw\n"))
    assert (librdkafka.username, librdkafka.password, librdkafka.cafile) == ("bob", "pw", None)
    no_check = load_command_config(_config(tmp_path, "security.protocol=SSL\nssl.ca.location=/ca.pem\n"
                                                     "ssl.endpoint.identification.algorithm=\n"))
    assert no_check == ClientSecurity("SSL", cafile="/ca.pem", check_hostname=False)


@pytest.mark.parametrize("text, message", [
    ("security.protocol=TLS\n", "security.protocol: TLS is not one of"),
    ("security.protocol=SASL_SSL\n", "sasl.mechanism: GSSAPI is not served"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", 'username="..." and password="..." are required'),
    ("security.protocol=SSL\nssl.truststore.location=/ca.jks\n", "ssl.truststore.type: kraftlog reads PEM"),
])
def test_a_command_config_kraftlog_cannot_use_is_refused_in_one_line(tmp_path, text, message):
    with pytest.raises(ValueError) as caught:
        load_command_config(_config(tmp_path, text))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_command_config_is_a_usage_error_naming_the_file(tmp_path):
    from click.testing import CliRunner

    from kraftlog.cli import main
    result = CliRunner().invoke(main, ["topics", "describe", "--bootstrap-server", "127.0.0.1:1", "--topic", "t",
                                       "--command-config", str(tmp_path / "nope.properties")])
    assert result.exit_code == 2 and "nope.properties: cannot read it" in result.output
