//! Each rule on a secret of its shape and on a look-alike it must leave alone; the entropy floor
//! on commit hashes, UUIDs and identifiers.
//!
//! The secrets are made at run time from a fixed generator, so no literal credential sits in the
//! source for a scanner (or a reader) to trip on.

use super::*;
use crate::redact::{Redactor, MASK};

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &str = "0123456789abcdef";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BECH32: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// `n` characters of `alphabet` from a fixed xorshift sequence: random-looking, the same on
/// every run.
fn noise(alphabet: &str, n: usize) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ (n as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chars[(state % chars.len() as u64) as usize]
        })
        .collect()
}

fn rule_index(id: &str) -> usize {
    RULES
        .iter()
        .position(|r| r.id == id)
        .unwrap_or_else(|| panic!("no rule {id}"))
}

/// What one rule alone masks in `text`.
fn found_by(id: &str, text: &str) -> Vec<String> {
    let i = rule_index(id);
    let regex = Regex::new(RULES[i].pattern).unwrap();
    let mut spans = Vec::new();
    rule_spans(&RULES[i], &regex, text, &mut spans);
    spans.into_iter().map(|s| text[s].to_string()).collect()
}

/// The rule masks `positive` (and the redactor with it), and leaves `negative` alone.
fn check(id: &str, positive: &str, negative: &str) {
    let found = found_by(id, positive);
    assert!(!found.is_empty(), "{id} misses {positive:?}");
    let redacted = Redactor::new(Vec::new()).redact(positive);
    assert!(
        redacted.contains(MASK),
        "{id}: {positive:?} -> {redacted:?}"
    );
    for secret in &found {
        assert!(!redacted.contains(secret.as_str()), "{id} leaks {secret:?}");
    }
    assert_eq!(
        found_by(id, negative),
        Vec::<String>::new(),
        "{id} on {negative:?}"
    );
}

macro_rules! rule_cases {
    ($($name:ident: $id:literal, $positive:expr, $negative:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check($id, &$positive, &$negative);
            }
        )*
        /// The rules the cases above cover.
        const COVERED: &[&str] = &[$($id),*];
    };
}

fn pem(kind: &str, lines: usize, end: bool) -> String {
    let mut text = format!("-----BEGIN {kind}-----\n");
    for i in 0..lines {
        text.push_str(&noise(BASE64, 64 - i % 3));
        text.push('\n');
    }
    if end {
        text.push_str(&format!("-----END {kind}-----"));
    }
    text
}

rule_cases! {
    private_key_block_is_masked_and_a_public_key_is_not: "private-key",
        pem(concat!("RSA PRIVATE", " KEY"), 4, true), pem("PUBLIC KEY", 4, true);
    private_key_head_cut_short_is_masked_but_a_bare_header_in_prose_is_not: "private-key-partial",
        pem(concat!("OPENSSH PRIVATE", " KEY"), 2, false),
        concat!("the file starts with -----BEGIN OPENSSH PRIVATE", " KEY----- and nothing else");
    aws_access_key_id_is_masked_but_the_documented_example_is_not: "aws-access-token",
        format!("id {}{}", "AKIA", noise(UPPER_DIGITS, 16)), concat!("AKIAIOSFODNN7", "EXAMPLE");
    aws_secret_access_key_is_masked_but_an_env_reference_is_not: "aws-secret-access-key",
        format!("aws_secret_access_key = {}", noise(BASE64, 40)),
        "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}";
    gcp_api_key_is_masked_but_a_short_lookalike_is_not: "gcp-api-key",
        format!("{}{}", "AIza", noise(ALNUM, 35)), "AIzaShort";
    gcp_service_account_key_id_is_masked_but_a_commit_hash_field_is_not: "gcp-service-account-key-id",
        format!("{{\"type\": \"service_account\", \"private_key_id\": \"{}\"}}", noise(HEX, 40)),
        format!("{{\"commit\": \"{}\"}}", noise(HEX, 40));
    azure_ad_client_secret_is_masked_but_a_tilde_in_a_word_is_not: "azure-ad-client-secret",
        format!("secret: {}8Q~{}", noise(ALNUM, 3), noise(ALNUM, 34)), "see ~/abc8Q~x";
    azure_storage_account_key_is_masked_but_an_empty_one_is_not: "azure-storage-account-key",
        format!("DefaultEndpointsProtocol=https;AccountName=x;AccountKey={}==;", noise(BASE64, 86)),
        "AccountName=x;AccountKey=;";
    azure_sas_signature_is_masked_but_a_short_sig_parameter_is_not: "azure-sas-signature",
        format!("https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig={}%3D", noise(ALNUM, 43)),
        "https://example.org/?sig=abc";
    digitalocean_token_is_masked_but_a_regular_one_is_not: "digitalocean-token",
        format!("{}{}", "dop_v1_", noise(HEX, 64)), format!("{}{}", "dop_v1_", "0".repeat(64));
    github_classic_token_is_masked_but_a_placeholder_is_not: "github-token",
        format!("token {}{}", "ghp_", noise(ALNUM, 36)), format!("{}{}", "ghp_", "x".repeat(36));
    github_fine_grained_pat_is_masked_but_a_short_name_is_not: "github-fine-grained-pat",
        format!("{}{}_{}", "github_pat_", noise(ALNUM, 22), noise(ALNUM, 59)), "github_pat_short";
    gitlab_pat_is_masked_but_a_placeholder_is_not: "gitlab-pat",
        format!("{}{}", "glpat-", noise(ALNUM, 20)), format!("{}{}", "glpat-", "x".repeat(20));
    gitlab_deploy_token_is_masked_but_a_short_name_is_not: "gitlab-token",
        format!("{}{}", "gldt-", noise(ALNUM, 20)), "gldt-short";
    gitlab_runner_registration_token_is_masked_but_a_short_one_is_not: "gitlab-runner-registration-token",
        format!("{}{}", "GR1348941", noise(ALNUM, 20)), "GR1348941short";
    npm_token_is_masked_but_an_npm_config_identifier_is_not: "npm-access-token",
        format!("//registry.npmjs.org/:_authToken={}{}", "npm_", noise(ALNUM, 36)),
        "npm_config_cache_folder_for_the_workspace_root";
    pypi_upload_token_is_masked_but_a_truncated_one_is_not: "pypi-upload-token",
        format!("password = {}{}", "pypi-AgEIcHlwaS5vcmc", noise(ALNUM, 60)), "pypi-AgEIcHlwaS5vcmcShort";
    rubygems_token_is_masked_but_a_rubygems_setting_is_not: "rubygems-api-token",
        format!("{}{}", "rubygems_", noise(HEX, 48)), "rubygems_version_requirement";
    stripe_live_secret_key_is_masked_but_a_placeholder_is_not: "stripe-access-token",
        format!("STRIPE_SECRET_KEY={}{}", "sk_live_", noise(ALNUM, 99)),
        format!("{}{}", "sk_live_", "x".repeat(24));
    slack_bot_token_is_masked_but_a_placeholder_phrase_is_not: "slack-token",
        format!("{}{}-{}-{}", "xoxb-", noise("0123456789", 12), noise("0123456789", 13), noise(ALNUM, 24)),
        "xoxb-your-bot-token-here";
    slack_app_token_is_masked_but_a_bare_prefix_is_not: "slack-app-token",
        format!("{}A{}-{}-{}", "xapp-1-", noise(UPPER_DIGITS, 10), noise("0123456789", 13), noise(HEX, 64)),
        "xapp-1-";
    slack_config_token_is_masked_but_a_short_one_is_not: "slack-config-access-token",
        format!("{}{}", "xoxe.xoxp-1-", noise(UPPER_DIGITS, 166)), "xoxe.xoxp-1-SHORT";
    slack_webhook_is_masked_but_the_documented_example_is_not: "slack-webhook-url",
        format!("https://hooks.slack.com/services/T{}/B{}/{}", noise(UPPER_DIGITS, 8), noise(UPPER_DIGITS, 8), noise(ALNUM, 24)),
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
    twilio_api_key_is_masked_but_not_inside_a_longer_word: "twilio-api-key",
        format!("{}{}", "SK", noise(HEX, 32)), format!("TA{}{}", "SK", noise(HEX, 32));
    sendgrid_key_is_masked_but_a_short_one_is_not: "sendgrid-api-token",
        format!("{}{}.{}", "SG.", noise(ALNUM, 22), noise(ALNUM, 43)), "SG.short";
    anthropic_key_is_masked_but_a_short_one_is_not: "anthropic-api-key",
        format!("{}{}AA", "sk-ant-api03-", noise(ALNUM, 93)), "sk-ant-short";
    openai_project_key_is_masked_but_a_kebab_case_name_is_not: "openai-api-key",
        format!("{}{}T3BlbkFJ{}", "sk-proj-", noise(ALNUM, 74), noise(ALNUM, 74)),
        "sk-learn-compatible-estimator-interface";
    hugging_face_token_is_masked_but_a_lower_case_name_is_not: "huggingface-access-token",
        format!("{}{}", "hf_", noise(LETTERS, 34)), "hf_hubdownloadcachedirectoryresolution";
    hugging_face_org_token_is_masked_but_a_lower_case_name_is_not: "huggingface-organization-api-token",
        format!("{}{}", "api_org_", noise(LETTERS, 34)), "api_org_membershiplookupforcurrentsession";
    perplexity_key_is_masked_but_a_short_one_is_not: "perplexity-api-key",
        format!("{}{}", "pplx-", noise(ALNUM, 48)), "pplx-short";
    shopify_token_is_masked_but_a_regular_one_is_not: "shopify-token",
        format!("{}{}", "shpat_", noise(HEX, 32)), format!("{}{}", "shpat_", "0".repeat(32));
    databricks_token_is_masked_but_a_short_one_is_not: "databricks-api-token",
        format!("{}{}", "dapi", noise(HEX, 32)), "rapidapi client";
    vault_token_is_masked_but_a_short_one_is_not: "vault-token",
        format!("{}{}", "hvs.", noise(ALNUM, 95)), "hvs.short";
    grafana_service_account_token_is_masked_but_a_short_one_is_not: "grafana-token",
        format!("{}{}_{}", "glsa_", noise(ALNUM, 32), noise(HEX, 8)), "glsa_short";
    postman_key_is_masked_but_a_short_one_is_not: "postman-api-token",
        format!("{}{}-{}", "PMAK-", noise(HEX, 24), noise(HEX, 34)), "PMAK-short";
    linear_key_is_masked_but_a_short_one_is_not: "linear-api-key",
        format!("{}{}", "lin_api_", noise(ALNUM, 40)), "lin_api_short";
    pulumi_token_is_masked_but_a_regular_one_is_not: "pulumi-api-token",
        format!("{}{}", "pul-", noise(HEX, 40)), format!("{}{}", "pul-", "0".repeat(40));
    age_secret_key_is_masked_but_a_short_one_is_not: "age-secret-key",
        format!("{}{}", "AGE-SECRET-KEY-1", noise(BECH32, 58)), "AGE-SECRET-KEY-1SHORT";
    heroku_key_is_masked_but_a_short_one_is_not: "heroku-api-key-v2",
        format!("{}{}", "HRKU-AA", noise(ALNUM, 58)), "HRKU-AAshort";
    sentry_user_token_is_masked_but_a_short_one_is_not: "sentry-token",
        format!("{}{}", "sntryu_", noise(HEX, 64)), "sntryu_short";
    doppler_token_is_masked_but_a_short_one_is_not: "doppler-api-token",
        format!("{}{}", "dp.pt.", noise(ALNUM, 43)), "dp.pt.short";
    planetscale_token_is_masked_but_a_short_one_is_not: "planetscale-token",
        format!("{}{}", "pscale_tkn_", noise(ALNUM, 43)), "pscale_tkn_short";
    jwt_is_masked_but_a_lone_header_is_not: "jwt",
        format!("eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}", noise(ALNUM, 30), noise(ALNUM, 43)),
        "the header eyJhbGciOiJIUzI1NiJ9 alone";
    url_password_is_masked_but_a_user_alone_or_a_variable_is_not: "url-password",
        format!("DATABASE_URL=postgres://app:{}@db.internal:5432/app", noise(ALNUM, 16)),
        "https://user@example.com/a and postgres://app:${DB_PASSWORD}@db/app and http://localhost:3000/x";
    bearer_token_is_masked_but_a_bearer_of_words_is_not: "bearer-token",
        format!("Authorization: Bearer {}", noise(ALNUM, 40)), "Bearer authentication-middleware";
    basic_auth_header_is_masked_but_a_basic_realm_is_not: "basic-auth-header",
        format!("Authorization: Basic {}", noise(BASE64, 24)), "WWW-Authenticate: Basic realm=x";
}

#[test]
fn every_rule_has_a_positive_and_a_negative_case() {
    let missing: Vec<&str> = RULES
        .iter()
        .map(|r| r.id)
        .filter(|id| !COVERED.contains(id))
        .collect();
    assert!(missing.is_empty(), "rules without cases: {missing:?}");
}

#[test]
fn every_rule_compiles_and_has_keywords() {
    for rule in RULES {
        assert!(Regex::new(rule.pattern).is_ok(), "{}", rule.id);
        assert!(!rule.keywords.is_empty(), "{}", rule.id);
        for keyword in rule.keywords {
            assert_eq!(*keyword, keyword.to_ascii_lowercase(), "{}", rule.id);
        }
    }
    assert!(COMPILED.keywords.is_some());
    assert!((0..RULES.len()).all(|i| regex_of(&COMPILED, i).is_some()));
}

#[test]
fn commit_hashes_uuids_and_identifiers_stay_readable() {
    let text = format!(
        "commit {} fixes 550e8400-e29b-41d4-a716-446655440000 in handle_request_with_retry_policy; \
         TASK_QUEUE_NAME, SKIP_PREFLIGHT_CHECK, sk-learn-compatible-estimator, {}{}, \
         see https://github.com/o/r/commit/{} and sha256:{}",
        noise(HEX, 40),
        "ghp_",
        "x".repeat(36),
        noise(HEX, 40),
        noise(HEX, 64),
    );
    assert_eq!(Redactor::new(Vec::new()).redact(&text), text);
}

#[test]
fn shannon_entropy_measures_bits_per_byte() {
    assert_eq!(shannon_entropy("aaaa"), 0.0);
    assert!((shannon_entropy("abab") - 1.0).abs() < 1e-6);
    assert!((shannon_entropy(HEX) - 4.0).abs() < 1e-6);
    assert!(shannon_entropy(&noise(ALNUM, 64)) > 4.5);
}

#[test]
fn a_secret_after_an_escaped_newline_in_a_json_line_is_masked() {
    let key = format!("{}{}", "sk_live_", noise(ALNUM, 32));
    let line = serde_json::json!({"type": "tool_result", "output": format!("PORT=3000\n{key}\n")})
        .to_string();
    assert!(line.contains("\\nsk_live_"), "{line}");
    let out = Redactor::new(Vec::new()).redact(&line);
    assert!(!out.contains(&key), "{out}");
    assert!(out.contains("PORT=3000"), "{out}");
}

#[test]
fn a_token_glued_to_a_word_is_not_a_token_start() {
    assert!(starts_token("x ghp_", 2));
    assert!(starts_token("ghp_", 0));
    assert!(starts_token("a\\nghp_", 3));
    assert!(!starts_token("xghp_", 1));
    assert!(!starts_token("an", 1));
}

#[test]
fn two_secrets_side_by_side_are_both_masked() {
    let a = format!("{}{}", "ghp_", noise(ALNUM, 36));
    let b = format!("{}{}", "ghp_", noise(ALNUM, 37));
    let out = Redactor::new(Vec::new()).redact(&format!("{a};{b} {a}"));
    assert_eq!(out, format!("{MASK};{MASK} {MASK}"));
}

#[test]
fn keywords_are_found_in_any_case_and_inside_one_another() {
    let compiled = &*COMPILED;
    let found = candidates_of(
        compiled,
        "Authorization: BEARER x and xoxe.xoxb-1 and sk-ant-",
    );
    for id in [
        "bearer-token",
        "slack-config-access-token",
        "slack-token",
        "anthropic-api-key",
        "openai-api-key",
    ] {
        assert!(found[rule_index(id)], "{id}");
    }
    assert!(!found[rule_index("stripe-access-token")]);
    assert!(candidates_of(compiled, "plain words only")
        .iter()
        .all(|f| !f));
}

#[test]
fn unsigned_jwts_and_jwe_compact_tokens_are_masked() {
    let unsigned = format!("eyJhbGciOiJub25lIn0.eyJ{}.", noise(ALNUM, 30));
    let jwe = format!(
        "eyJhbGciOiJSU0EtT0FFUCJ9.{}.{}.{}.{}",
        noise(ALNUM, 40),
        noise(ALNUM, 16),
        noise(ALNUM, 50),
        noise(ALNUM, 22)
    );
    let r = Redactor::new(Vec::new());
    for token in [unsigned, jwe] {
        let out = r.redact(&format!("token: {token} end"));
        assert_eq!(out, format!("token: {MASK} end"));
    }
}
