//! One test per masking category, against the rules file Ghost ships (`config/masking.yaml`,
//! read from disk as a process reads it). Each test plants values in ordinary sentences and
//! checks that none survives, that the category is reported and that look-alikes that are
//! not secrets are left alone.

use std::path::Path;
use std::sync::LazyLock;

use ghost_shared::masking::{Masked, Masker};

static MASKER: LazyLock<Masker> = LazyLock::new(|| {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/masking.yaml");
    match ghost_shared::masking::masker_from_file(&path) {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    }
});

fn masker() -> &'static Masker {
    &MASKER
}

/// Masks each value inside `template` (`{}` marks the spot) and checks it is gone and
/// reported as `category`.
fn assert_masked(category: &str, template: &str, values: &[&str]) {
    let m = masker();
    for value in values {
        let text = template.replace("{}", value);
        let Masked {
            masked, categories, ..
        } = m.mask(&text);
        assert!(
            !masked.contains(value),
            "{category}: {value:?} survived in {masked:?}"
        );
        assert!(
            masked.contains(&format!("[REDACTED:{category}]")),
            "{category}: {value:?} -> {masked:?}"
        );
        assert!(
            categories.iter().any(|c| c == category),
            "{category}: {value:?} reported {categories:?}"
        );
    }
}

fn assert_untouched(texts: &[&str]) {
    let m = masker();
    for text in texts {
        let out = m.mask(text);
        assert_eq!(out.masked, *text, "changed: {:?}", out.categories);
    }
}

#[test]
fn provider_api_keys_and_tokens() {
    assert_masked(
        "api_key",
        "キーは {} です",
        &[
            "sk-abcdefghijklmnop1234567890",
            "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456",
            "sk-svcacct-AbCdEfGhIjKlMnOpQrStUv123456",
            "sk-ant-api03-abcdefghijklmnopqrstuv_WXYZ0123",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "ya29.a0AfH6SMBx1234567890abcdefghij",
            "GOCSPX-abcdefghijklmnopqrstuvwx",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "gho_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            "glpat-abcdefghij1234567890",
            "xoxb-1234567890-abcdefghij",
            "xoxp-1234567890-abcdefghij",
            "xapp-1-A0123456789-abcdefghij",
            "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX",
            "sk_live_51H8abcdefghijklmnopqrstu",
            "rk_test_51H8abcdefghijklmnopqrstu",
            "whsec_abcdefghijklmnopqrstuvwxyz012345",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAY34FZKBOKMUTVV7A",
            "abc8Q~abcdefghijklmnopqrstuvwxyz0123456",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
            "acme_live_abc123def456ghi789",
            "shop_test_ZXY987abc654def321",
        ],
    );
    assert_masked(
        "api_key",
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey={};",
        &["AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFG="],
    );
    assert_untouched(&["a task-list of sk-tasks", "is_test_case", "desk-top"]);
}

#[test]
fn aws_secret_access_keys() {
    assert_masked(
        "aws_secret_key",
        "AKIA is masked elsewhere; the secret {} sits beside it",
        &[
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        ],
    );
    // A git commit id (40 hex, no upper case) and long paths stay.
    assert_untouched(&[
        "commit 9200390a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed it",
        "see /usr/local/lib/python3.12/site-packages/requests/adapters.py",
    ]);
}

#[test]
fn json_web_tokens() {
    assert_masked(
        "jwt",
        "token={}",
        &["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
    );
}

#[test]
fn pem_private_keys() {
    assert_masked(
        "private_key",
        "鍵:\n{}\n以上",
        &[
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
        ],
    );
    let m = masker();
    assert_eq!(
        m.mask("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE").masked,
        "[REDACTED:private_key]",
        "an unterminated block is masked to the end"
    );
    assert_untouched(&["-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"]);
}

#[test]
fn passwords_in_urls_and_connection_strings() {
    assert_masked(
        "url_credentials",
        "DATABASE_URL={}@db.local:5432/app",
        &["postgres://ghost:s3cret", "mysql://root:Pa55word!"],
    );
    let m = masker();
    let out = m.mask("nats://user:pw@localhost:4222 and redis://:hunter2@cache:6379");
    assert!(
        !out.masked.contains("user:pw") && !out.masked.contains("hunter2"),
        "{out:?}"
    );
    // ADO.NET / JDBC style: the password assignment inside the string.
    let ado = m.mask("Server=db;Database=app;User Id=sa;Password=Tr0ub4dor&3;");
    assert!(!ado.masked.contains("Tr0ub4dor&3"), "{ado:?}");
    assert!(ado.masked.contains("Server=db"), "{ado:?}");
    assert_untouched(&["see https://example.com/docs and mailto:"]);
}

#[test]
fn authorization_headers() {
    assert_masked(
        "auth_header",
        "curl -H 'Authorization: {}'",
        &[
            "Bearer abcdefghijklmnopqrstuvwxyz123456",
            "Basic dXNlcjpwYXNzd29yZA==",
        ],
    );
    assert_untouched(&["a basic understanding of token validation"]);
}

#[test]
fn secret_assignments_in_code_and_config() {
    let values = ["hunter2hunter2", "s3cr3t-Value", "ZmFrZS1zZWNyZXQ"];
    for template in [
        "password={}",
        "DB_PASSWORD={}",
        "export API_TOKEN={}",
        "password: {}",
        "  client_secret: \"{}\"",
        "{\"password\": \"{}\", \"user\": \"ren\"}",
        "api_key = \"{}\"",
        "apiKey: '{}'",
        "secret_key_base = {}",
        "$config['db_pass'] = '{}';",
        "mysql --password={} -u root",
        "deploy --api-token {} --verbose",
        "psql --password '{}'",
        "X-Api-Key: {}",
        "clientSecret := \"{}\"",
    ] {
        assert_masked("secret_assignment", template, &values);
    }
    let m = masker();
    let json = m.mask(r#"{"password": "s3cr3t", "user": "ren"}"#);
    assert!(json.masked.contains("\"user\": \"ren\""), "{json:?}");
    assert_untouched(&[
        "token = os.getenv(\"TOKEN\")",
        "password = ${DB_PASSWORD}",
        "def login(user, password: str):",
        "max_tokens: 512",
        "token_count = 3",
        "user: ren",
    ]);
}

#[test]
fn secrets_introduced_in_words() {
    assert_masked(
        "secret_in_words",
        "fyi my password is {} so log in",
        &["hunter2", "correcthorsebatterystaple"],
    );
    assert_masked("secret_in_words", "the api key is {}", &["abcd1234efgh"]);
    assert_masked("secret_in_words", "The PIN code is {}.", &["4921"]);
    assert_masked(
        "secret_in_words",
        "パスワードは{}です",
        &["hunter2", "「ひみつのあいことば」"],
    );
    assert_masked("secret_in_words", "暗証番号は {} だよ", &["4921"]);
    assert_masked(
        "secret_in_words",
        "パスワード：{}",
        &["ひみつ123", "hunter2"],
    );
    assert_masked("secret_in_words", "トークンが{}になってる", &["abc123XYZ"]);
    assert_untouched(&[
        "my password is wrong",
        "the token is invalid",
        "パスワードを忘れた",
        "パスワードは変更しました",
    ]);
}

#[test]
fn payment_card_numbers() {
    assert_masked(
        "payment_card",
        "カード番号 {} で払って",
        &[
            "4111 1111 1111 1111",
            "4111-1111-1111-1111",
            "4111.1111.1111.1111",
            "4111111111111111",
            "5500 0000 0000 0004",
            "3782 822463 10005",
            "6011000990139424",
        ],
    );
    assert_masked(
        "payment_card",
        "card {} exp 12/28",
        &["4242 4242 4242 4242"],
    );
    // Not Luhn-valid: an order number stays.
    assert_untouched(&["注文番号 4111 1111 1111 1112 です", "id 1234567890123"]);
}

#[test]
fn national_id_numbers() {
    assert_masked(
        "national_id",
        "番号は{}です",
        &["123456789018", "1234 5678 9018", "1234-5678-9018"],
    );
    assert_masked("national_id", "SSN {} on file", &["123-45-6789"]);
    assert_masked(
        "national_id",
        "NI number {} please",
        &["AB 12 34 56 C", "AB123456C"],
    );
    assert_masked("national_id", "身份证号{}", &["11010519491231002X"]);
    // A 12-digit number with the wrong My Number check digit, an impossible SSN: numbers
    // nothing names as an ID.
    assert_untouched(&["番号は123456789012です", "ticket 666-12-3456 closed"]);
}

#[test]
fn numbers_named_as_national_ids_are_masked_whatever_their_check_digit() {
    // 1234 5678 9012 fails the My Number check digit, 666-12-3456 and 999-12-3456 the SSN
    // rules: their writer says what they are, so they are private all the same.
    for template in [
        "マイナンバー {}",
        "マイナンバーは{}です",
        "個人番号：{}",
        "my number is {}",
        "My Number: {}",
    ] {
        assert_masked(
            "national_id",
            template,
            &["1234 5678 9012", "123456789012", "1234-5678-9012"],
        );
    }
    for template in ["SSN {}", "my SSN is {}", "social security number: {}"] {
        assert_masked("national_id", template, &["666-12-3456", "999-12-3456"]);
    }
}

/// Labels as people write them (issue 47 item 10): words between the label and the number,
/// the label in brackets or after the number, and every country's ID in the category
/// labelled, each with a check digit that fails, so only the label can say what it is.
#[test]
fn labelled_national_ids_are_masked_in_the_forms_people_write() {
    for template in [
        "マイナンバーカードの番号は 1234 5678 9012 です",
        "個人番号（マイナンバー）は、1234-5678-9012",
        "私のマイナンバーは「123456789012」だよ",
        "1234 5678 9012 が私のマイナンバーです",
        "my number on the card is 1234 5678 9012",
    ] {
        let out = masker().mask(template);
        assert!(
            !out.masked.contains("5678") && out.masked.contains("[REDACTED:national_id]"),
            "{template:?} -> {:?}",
            out.masked
        );
    }
    for template in [
        "my SSN on file is {}",
        "Social Security Number (SSN): {}",
        "社会保障番号は {} です",
    ] {
        assert_masked("national_id", template, &["666-12-3456", "999-12-3456"]);
    }
    // An 18-character Chinese resident ID whose ISO 7064 check fails (…0021, not …002X).
    for template in [
        "身份证号码是 {}",
        "居民身份证：{}",
        "my resident ID card number is {}",
    ] {
        assert_masked("national_id", template, &["110105194912310021"]);
    }
    // A National Insurance number written in lower case, or with a prefix never issued.
    for template in [
        "my national insurance number is {}",
        "NI number: {}",
        "NINO {}",
    ] {
        assert_masked("national_id", template, &["ab 12 34 56 c", "QQ123456C"]);
    }
    // No label, no mask: a 12-digit number that fails the check, a sentence about numbers.
    assert_untouched(&[
        "注文番号は 1234 5678 9012 です",
        "マイナンバーカードを作った。予約番号は 1234 5678 9012",
        "my number of cats is 3",
    ]);
}

#[test]
fn phone_numbers() {
    assert_masked(
        "phone",
        "電話は{}です",
        &[
            "090-1234-5678",
            "03-1234-5678",
            "0120-123-456",
            "09012345678",
            "0312345678",
            "(03) 1234-5678",
        ],
    );
    assert_masked(
        "phone",
        "call {} now",
        &[
            "+81 90-1234-5678",
            "+1 (415) 555-2671",
            "+44 20 7946 0958",
            "+819012345678",
        ],
    );
    assert_untouched(&[
        "2026-02-20 の予定",
        "version 1.2.3",
        "port 5432",
        "id 123456789",
        "+1 point",
        "x = 0.5 + 3",
        "name,score\nA,1\nB,2",
    ]);
}

#[test]
fn email_addresses() {
    assert_masked(
        "email",
        "連絡先は {} まで",
        &["ren.k+ghost@example.co.jp", "a@b.io"],
    );
}

#[test]
fn street_addresses() {
    assert_masked(
        "street_address",
        "住所は{}です",
        &[
            "東京都千代田区千代田1-1",
            "大阪市北区梅田3丁目1番3号",
            "札幌市中央区北1条西2丁目",
            "〒100-0001",
        ],
    );
    assert_masked(
        "street_address",
        "ship to {}, thanks",
        &[
            "1600 Pennsylvania Avenue",
            "221B Baker Street",
            "42 Wallaby Way Apt 3",
        ],
    );
    assert_untouched(&["東京に行った", "3 Little Pigs", "市区町村の一覧"]);
}

#[test]
fn several_kinds_in_one_text_are_all_masked_and_reported() {
    let m = masker();
    let out = m.mask(
        "ren@example.com / 090-1111-2222 / sk-abcdefghijklmnop12345 / postgres://a:b@h/d / 4111 1111 1111 1111",
    );
    for leaked in ["ren@", "1111-2222", "sk-abc", "a:b@", "4111"] {
        assert!(!out.masked.contains(leaked), "{out:?}");
    }
    assert_eq!(
        out.categories,
        [
            "api_key",
            "email",
            "payment_card",
            "phone",
            "url_credentials"
        ]
    );
    assert_eq!(
        out.high_risk,
        ["api_key", "payment_card", "url_credentials"]
    );
}

#[test]
fn secrets_glued_to_japanese_text_are_masked() {
    // No space between the Japanese word and the key: word boundaries are ASCII ones.
    assert_masked(
        "api_key",
        "鍵{}です",
        &["sk-proj-AbCdEfGhIjKlMnOpQrStUv123456"],
    );
    assert_masked("api_key", "キー{}を使って", &["AKIAIOSFODNN7EXAMPLE"]);
    assert_masked(
        "api_key",
        "トークン{}",
        &["ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123"],
    );
}
