"""TLS, mutual TLS and bearer tokens against the real dedupd."""
import os

import pytest

import dedupd
from dedupd_testing import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    paths = make_pki(str(d))
    for name, value in (("token", "s3cret-token\n"), ("admin-token", "adm1n-token\n")):
        with open(os.path.join(str(d), name), "w") as f:
            f.write(value)
    paths["token"] = os.path.join(str(d), "token")
    paths["admin-token"] = os.path.join(str(d), "admin-token")
    return paths


def tls_flags(p):
    return ["--tls_cert_file=" + p["server"] + ".pem", "--tls_key_file=" + p["server"] + ".key"]


def fast(address, **kw):
    return dedupd.Client(address, timeout=10, max_attempts=1, **kw)


def test_tls_with_a_private_ca(make_server, pki):
    s = make_server(tls_flags(pki))
    with fast(s.address, tls=dedupd.TLS(ca_file=pki["ca"] + ".pem")) as c:
        assert c.check_urls(["https://tls.example/"])[0].verdict == "NEW"
    with fast("localhost:%d" % s.port, tls=dedupd.TLS(ca_file=pki["ca"] + ".pem")) as c:
        assert c.check_urls(["https://tls.example/"])[0].verdict == "SEEN"
    with fast(s.address, tls=dedupd.TLS(ca_file=pki["ca"] + ".pem",
                                        server_name="dedupd.example")) as c:
        with pytest.raises(dedupd.Unavailable):
            c.check_urls(["https://tls.example/"])
    with fast(s.address, tls=dedupd.TLS(ca_file=pki["other-ca"] + ".pem")) as c:
        with pytest.raises(dedupd.Unavailable):
            c.check_urls(["https://tls.example/"])
    with fast(s.address) as plaintext:
        with pytest.raises(dedupd.Unavailable):
            plaintext.check_urls(["https://tls.example/"])


def test_mutual_tls(make_server, pki):
    s = make_server(tls_flags(pki) + ["--tls_client_ca_file=" + pki["ca"] + ".pem"])
    ca = pki["ca"] + ".pem"
    with fast(s.address, tls=dedupd.TLS(ca_file=ca, cert_file=pki["client"] + ".pem",
                                        key_file=pki["client"] + ".key")) as c:
        assert c.check_urls(["https://mtls.example/"])[0].verdict == "NEW"
    for tls in (dedupd.TLS(ca_file=ca),
                dedupd.TLS(ca_file=ca, cert_file=pki["stranger"] + ".pem",
                           key_file=pki["stranger"] + ".key")):
        with fast(s.address, tls=tls) as c:
            with pytest.raises(dedupd.Unavailable):
                c.check_urls(["https://mtls.example/"])


def test_bearer_tokens_and_the_admin_token(make_server, pki):
    s = make_server(tls_flags(pki) + ["--auth_token_file=" + pki["token"],
                                      "--admin_token_file=" + pki["admin-token"]])
    tls = dedupd.TLS(ca_file=pki["ca"] + ".pem")
    token = dedupd.read_token_file(pki["token"])
    assert token == "s3cret-token"
    with fast(s.address, tls=tls, token=token) as c:
        assert c.check_urls(["https://tok.example/"])[0].verdict == "NEW"
        with pytest.raises(dedupd.PermissionDenied):
            c.stats()
    with fast(s.address, tls=tls, token=token, admin_token="adm1n-token") as c:
        assert c.stats().url_seen_mode == "exact"
        assert c.check_urls(["https://tok.example/"])[0].verdict == "SEEN"
    with fast(s.address, tls=tls) as c:
        with pytest.raises(dedupd.Unauthenticated) as e:
            c.check_urls(["https://tok.example/"])
        assert "authorization" in str(e.value)
    with fast(s.address, tls=tls, token="wrong") as c:
        with pytest.raises(dedupd.Unauthenticated):
            c.check_urls(["https://tok.example/"])


def test_token_on_plaintext(make_server, pki):
    s = make_server(["--auth_token_file=" + pki["token"]])
    with fast(s.address, token="s3cret-token") as c:
        assert c.check_urls(["https://plain-token.example/"])[0].verdict == "NEW"
    with fast(s.address) as c:
        with pytest.raises(dedupd.Unauthenticated):
            c.check_urls(["https://plain-token.example/"])
