use super::*;

const RSA: &str = r#"{"kty":"RSA","kid":"r1","use":"sig","n":"sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw","e":"AQAB"}"#;
const ENC: &str = r#"{"kty":"RSA","kid":"e1","use":"enc","alg":"RSA-OAEP","n":"sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw","e":"AQAB"}"#;
const EC: &str = r#"{"kty":"EC","kid":"c1","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;
const ED: &str = r#"{"kty":"OKP","kid":"d1","crv":"Ed25519","alg":"EdDSA","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
const HMAC: &str = r#"{"kty":"oct","kid":"h1","alg":"HS256","k":"c2VjcmV0"}"#;

fn kinds(body: &str) -> Vec<(Option<String>, Algorithm)> {
    parse(body.as_bytes())
        .unwrap()
        .into_iter()
        .map(|k| (k.kid, k.alg))
        .collect()
}

#[test]
fn signing_keys_are_read_with_the_algorithm_their_type_implies() {
    let body = format!(r#"{{"keys":[{RSA},{ENC},{EC},{ED},{HMAC},{{"kty":"XYZ"}},7]}}"#);
    assert_eq!(
        kinds(&body),
        vec![
            (Some("r1".into()), Algorithm::RS256),
            (Some("c1".into()), Algorithm::ES256),
            (Some("d1".into()), Algorithm::EdDSA),
        ],
        "encryption keys, shared secrets and unreadable entries are left out"
    );
}

#[test]
fn a_key_published_for_another_algorithm_is_left_out() {
    let ps = RSA.replace(r#""use":"sig""#, r#""use":"sig","alg":"PS256""#);
    assert!(kinds(&format!(r#"{{"keys":[{ps}]}}"#)).is_empty());
}

#[test]
fn a_document_that_is_no_key_set_is_an_error() {
    assert!(parse(b"not json").is_err());
    assert!(parse(br#"{"keys":{}}"#).is_err());
    assert!(parse(br#"[]"#).is_err());
}

#[test]
fn plain_http_is_refused_except_to_a_loopback_address() {
    let refresh = Duration::from_secs(600);
    for ok in [
        "https://idp.example/jwks",
        "http://127.0.0.1:8080/jwks",
        "http://localhost/jwks",
        "http://[::1]:9000/jwks",
    ] {
        assert!(Jwks::new(ok, refresh).is_ok(), "{ok}");
    }
    for bad in [
        "http://idp.example/jwks",
        "http://192.0.2.1/jwks",
        "ftp://x/y",
        "jwks",
    ] {
        let e = Jwks::new(bad, refresh).err().expect(bad).to_string();
        assert!(e.contains("A2A_MAILBOX_JWT_JWKS_URL"), "{bad}: {e}");
    }
}

#[test]
fn a_token_without_kid_uses_the_only_key_of_its_algorithm() {
    let jwks = Jwks::new("https://idp.example/jwks", Duration::from_secs(600)).unwrap();
    let body = format!(r#"{{"keys":[{RSA},{EC}]}}"#);
    *jwks.keys.write().unwrap() = Arc::new(parse(body.as_bytes()).unwrap());
    assert!(matches!(
        jwks.with_key(None, Algorithm::RS256, |_| ()),
        Found::Key(())
    ));
    assert!(matches!(
        jwks.with_key(None, Algorithm::EdDSA, |_| ()),
        Found::Unknown
    ));
    assert!(matches!(
        jwks.with_key(Some("c1"), Algorithm::RS256, |_| ()),
        Found::OtherAlgorithm(Algorithm::ES256)
    ));
    assert!(matches!(
        jwks.with_key(Some("zz"), Algorithm::RS256, |_| ()),
        Found::Unknown
    ));
}
