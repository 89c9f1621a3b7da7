use super::*;
use crate::domain::Micros;
use crate::domain::catalogue::{self, Provider};

fn lookup(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
    move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
}

#[test]
fn local_names_round_trip_through_the_environment() {
    let r = Resources::local("atelier-test", "http://127.0.0.1:4566");
    let c = Config::from_lookup(lookup(r.to_env())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.resources, r);
    assert_eq!(c.limits, Limits::default());
    assert_eq!(r.queue_name(), "atelier-test-jobs");
}

#[test]
fn a_stuck_threshold_not_longer_than_the_consumer_timeout_is_refused() {
    let mut env = Resources::local("p", "http://x").to_env();
    env.push((env::CONSUMER_TIMEOUT_SECS, "300".into()));
    env.push((env::STUCK_AFTER_SECS, "300".into()));
    assert!(matches!(
        Config::from_lookup(lookup(env)),
        Err(ConfigError::Invalid {
            name: env::STUCK_AFTER_SECS,
            ..
        })
    ));
}

#[test]
fn resend_waits_grow_fourfold_from_the_first_up_to_the_longest() {
    let l = Limits::default();
    let waits: Vec<u64> = (1..=7).map(|n| l.resend_wait(n).as_secs()).collect();
    assert_eq!(waits, [60, 240, 900, 900, 900, 900, 900]);
    assert_eq!(l.first_resend_after().as_secs(), 60);
    assert_eq!(Limits::default().resend_wait(u32::MAX).as_secs(), 900);
}

#[test]
fn a_queued_deadline_not_longer_than_the_first_resend_wait_is_refused() {
    let mut env = Resources::local("p", "http://x").to_env();
    env.push((env::REQUEUE_AFTER_SECS, "120".into()));
    env.push((env::QUEUED_DEADLINE_SECS, "120".into()));
    assert!(matches!(
        Config::from_lookup(lookup(env)),
        Err(ConfigError::Invalid {
            name: env::QUEUED_DEADLINE_SECS,
            ..
        })
    ));
}

#[test]
fn a_longest_resend_wait_shorter_than_the_first_is_refused() {
    let mut env = Resources::local("p", "http://x").to_env();
    env.push((env::REQUEUE_AFTER_SECS, "300".into()));
    env.push((env::REQUEUE_MAX_SECS, "60".into()));
    assert!(matches!(
        Config::from_lookup(lookup(env)),
        Err(ConfigError::Invalid {
            name: env::REQUEUE_MAX_SECS,
            ..
        })
    ));
}

#[test]
fn the_queued_deadline_defaults_to_an_hour_and_is_read_from_its_variable() {
    let env = Resources::local("p", "http://x").to_env();
    let c = Config::from_lookup(lookup(env.clone())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.queued_deadline_secs, 3600);
    let mut env = env;
    env.push((env::QUEUED_DEADLINE_SECS, "7200".into()));
    let c = Config::from_lookup(lookup(env)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.queued_deadline_secs, 7200);
}

#[test]
fn webhooks_refuse_private_addresses_unless_a_local_run_allows_them() {
    use crate::config::PrivateAddresses;
    let read = |value: Option<&str>| {
        let mut env = Resources::local("p", "http://x").to_env();
        env.extend(value.map(|v| (env::WEBHOOK_PRIVATE_ADDRESSES, v.to_owned())));
        Config::from_lookup(lookup(env)).map(|c| c.webhooks.private_addresses)
    };
    assert_eq!(read(None), Ok(PrivateAddresses::Refuse));
    assert_eq!(read(Some("refuse")), Ok(PrivateAddresses::Refuse));
    assert_eq!(read(Some("allow")), Ok(PrivateAddresses::Allow));
    assert!(matches!(
        read(Some("yes")),
        Err(ConfigError::Invalid {
            name: env::WEBHOOK_PRIVATE_ADDRESSES,
            ..
        })
    ));
}

#[test]
fn unbound_store_purchases_are_refused_unless_the_deployment_accepts_them() {
    let read = |value: Option<&str>| {
        let mut env = Resources::local("p", "http://x").to_env();
        env.extend(value.map(|v| (env::UNBOUND_STORE_PURCHASES, v.to_owned())));
        Config::from_lookup(lookup(env)).map(|c| c.payments.unbound_store_purchases)
    };
    assert_eq!(read(None), Ok(UnboundPurchases::Refuse));
    assert_eq!(read(Some("refuse")), Ok(UnboundPurchases::Refuse));
    assert_eq!(read(Some("accept")), Ok(UnboundPurchases::Accept));
    assert!(matches!(
        read(Some("yes")),
        Err(ConfigError::Invalid {
            name: env::UNBOUND_STORE_PURCHASES,
            ..
        })
    ));
}

#[test]
fn log_settings_default_to_json_at_info() {
    assert_eq!(
        LogSettings::from_lookup(|_| None),
        LogSettings {
            level: "info".into(),
            text: false
        }
    );
    let set = LogSettings::from_lookup(lookup(vec![
        (env::LOG_LEVEL, "DEBUG".into()),
        (env::LOG_FORMAT, "Text".into()),
    ]));
    assert_eq!(
        set,
        LogSettings {
            level: "debug".into(),
            text: true
        }
    );
}

/// Runs every reader with `set` and returns each name they asked for.
fn names_read(set: &[(&str, &str)]) -> std::collections::BTreeSet<String> {
    let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let mut env = Resources::local("p", "http://x").to_env();
    for (k, v) in set {
        if let Some(var) = env::find(k) {
            env.push((var.name, (*v).to_owned()));
        }
    }
    let recording = |k: &str| {
        asked.borrow_mut().insert(k.to_owned());
        env.iter()
            .rev()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
    };
    let _ = Config::from_lookup(recording).unwrap_or_else(|e| panic!("{e}"));
    let _ = ModelSettings::from_lookup(recording).unwrap_or_else(|e| panic!("{e}"));
    let _ = LogSettings::from_lookup(recording);
    let _ = PaymentSettings::from_lookup(recording).unwrap_or_else(|e| panic!("{e}"));
    let _ = AdminSettings::from_lookup(recording);
    let _ = SigningSettings::from_lookup(recording);
    asked.into_inner()
}

#[test]
fn every_variable_the_code_reads_is_in_the_one_table_and_every_listed_one_is_read() {
    let listed: std::collections::BTreeSet<String> =
        env::ALL.iter().map(|v| v.name.to_owned()).collect();
    // Defaults, and every variable set (a reader may only ask for some names when others
    // are set, e.g. the model URL's default depends on the key).
    let all_set = [
        (env::MODEL_API_KEY, "k"),
        (env::MODEL_API_KEY_SECRET_ID, "arn"),
        (env::MODEL_BASE_URL, "https://m.example"),
        (env::GEMINI_API_KEY, "g"),
        (env::GEMINI_API_KEY_SECRET_ID, "arn-g"),
        (env::GEMINI_BASE_URL, "https://g.example"),
        (env::DAILY_CAP_MICROS, "7"),
        (env::RESULT_URL_TTL_SECS, "60"),
        (env::RESULT_RETENTION_DAYS, "30"),
        (env::EMAIL_VERIFIED_CLAIM, "custom:verified"),
        (env::STRIPE_SECRET_KEY, "sk_test_x"),
    ];
    let mut read = names_read(&[]);
    read.extend(names_read(&all_set));
    let unlisted: Vec<_> = read.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "read but missing from config::env (so from env-names and the infrastructure): {unlisted:?}"
    );
    let unread: Vec<_> = listed.difference(&read).collect();
    assert!(unread.is_empty(), "listed but never read: {unread:?}");
    // The two the table once lacked.
    assert!(env::find("ATELIER_DAILY_CAP_MICROS").is_some());
    assert!(env::find("ATELIER_RESULT_URL_TTL_SECS").is_some());
    let mut names: Vec<_> = env::ALL.iter().map(|v| v.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), env::ALL.len(), "a name listed twice");
}

#[test]
fn payment_settings_name_a_bad_catalogue_or_return_url_and_never_print_the_keys() {
    let bad = |name: &'static str, value: &str| {
        PaymentSettings::from_lookup(lookup(vec![(name, value.to_owned())]))
    };
    assert!(matches!(
        bad(env::CREDIT_PACKS, "starter:0:500:usd"),
        Err(ConfigError::Invalid {
            name: env::CREDIT_PACKS,
            ..
        })
    ));
    assert!(matches!(
        bad(env::CHECKOUT_RETURN_URLS, "javascript:alert(1)"),
        Err(ConfigError::Invalid {
            name: env::CHECKOUT_RETURN_URLS,
            ..
        })
    ));
    let keyed = PaymentSettings::from_lookup(lookup(vec![
        (env::STRIPE_SECRET_KEY, "sk_test_secret".into()),
        (env::STRIPE_WEBHOOK_SECRET, "whsec_secret".into()),
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let shown = format!("{keyed:?}");
    assert!(
        !shown.contains("sk_test_secret") && !shown.contains("whsec_secret"),
        "{shown}"
    );
    assert_eq!(keyed.stripe_base_url, STAND_IN_STRIPE_URL);
    let deployed =
        PaymentSettings::from_lookup(lookup(vec![(env::STRIPE_SECRET_ID, "arn".into())]))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deployed.stripe_base_url, "https://api.stripe.com");
}

#[test]
fn a_name_the_table_does_not_declare_cannot_be_read() {
    assert_eq!(
        declared(&|_| Some("x".into()), "ATELIER_NOT_DECLARED"),
        Err(ConfigError::Undeclared("ATELIER_NOT_DECLARED"))
    );
}

#[test]
fn upload_limits_and_the_verified_claim_are_read_and_checked() {
    let c = Config::from_lookup(lookup(Resources::local("p", "http://x").to_env()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.upload_slots_per_day, 150);
    assert_eq!(c.limits.upload_bytes_per_day, 1 << 30);
    assert_eq!(c.identity.email_verified_claim, "email_verified");
    let mut env = Resources::local("p", "http://x").to_env();
    env.push((env::UPLOAD_SLOTS_PER_DAY, "3".into()));
    env.push((env::UPLOAD_BYTES_PER_DAY, "30000000".into()));
    env.push((env::EMAIL_VERIFIED_CLAIM, " custom:email_ok ".into()));
    let c = Config::from_lookup(lookup(env)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.upload_slots_per_day, 3);
    assert_eq!(c.limits.upload_bytes_per_day, 30_000_000);
    assert_eq!(c.identity.email_verified_claim, "custom:email_ok");
    let refused = [
        (env::UPLOAD_SLOTS_PER_DAY, "0", "no slot at all"),
        (
            env::UPLOAD_BYTES_PER_DAY,
            "1000",
            "below one photo's 20 MiB",
        ),
        (env::EMAIL_VERIFIED_CLAIM, "a b", "not a claim name"),
        (env::EMAIL_VERIFIED_CLAIM, "", "empty"),
    ];
    for (name, value, why) in refused {
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((name, value.into()));
        assert!(
            matches!(Config::from_lookup(lookup(env)), Err(ConfigError::Invalid { name: n, .. }) if n == name),
            "{why}"
        );
    }
}

#[test]
fn the_daily_cap_is_read_from_its_variable() {
    let mut env = Resources::local("p", "http://x").to_env();
    env.push((env::DAILY_CAP_MICROS, "5000000".into()));
    let c = Config::from_lookup(lookup(env)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.daily_cap_micros, Micros::new(5_000_000));
}

#[test]
fn the_user_share_is_read_from_its_variable_and_zero_is_refused() {
    let mut env = Resources::local("p", "http://x").to_env();
    env.push((env::USER_DAILY_SHARE_MICROS, "250000".into()));
    let c = Config::from_lookup(lookup(env.clone())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.user_daily_share_micros, Micros::new(250_000));
    env.push((env::USER_DAILY_SHARE_MICROS, "0".into()));
    env.swap_remove(env.len() - 2);
    assert!(
        Config::from_lookup(lookup(env)).is_err(),
        "a zero share refuses every user"
    );
}

#[test]
fn missing_and_malformed_variables_are_named() {
    let r = Resources::local("p", "http://x");
    let mut env = r.to_env();
    env.retain(|(k, _)| *k != env::JOBS_TABLE);
    assert_eq!(
        Config::from_lookup(lookup(env)),
        Err(ConfigError::Missing(env::JOBS_TABLE))
    );
    let mut env = r.to_env();
    env.push((env::MAX_IN_FLIGHT, "zero".into()));
    assert!(matches!(
        Config::from_lookup(lookup(env)),
        Err(ConfigError::Invalid {
            name: env::MAX_IN_FLIGHT,
            ..
        })
    ));
}

#[test]
fn a_model_past_its_shutdown_stops_the_cold_start_naming_variable_date_and_replacements() {
    let today = time::macros::date!(2026 - 12 - 01);
    let get = |k: &str| (k == env::IMAGE_MODEL).then(|| "gpt-image-1".to_owned());
    let err = ModelSettings::from_lookup_on(get, today).expect_err("gpt-image-1 is shut down");
    let text = err.to_string();
    for part in [env::IMAGE_MODEL, "2026-10-23", "gpt-image-2.5-sunburst"] {
        assert!(text.contains(part), "{part} missing from: {text}");
    }
}

#[test]
fn provider_lists_default_to_openai_alone_and_refuse_unknown_or_repeated_names() {
    let today = time::macros::date!(2026 - 12 - 01);
    let defaults = ModelSettings::from_lookup_on(|_| None, today).expect("defaults");
    assert_eq!(defaults.edit_providers, [Provider::OpenAi]);
    assert_eq!(defaults.vision_providers, [Provider::OpenAi]);
    assert!(!defaults.uses(Provider::Gemini));
    let set = |v: &'static str| move |k: &str| (k == env::EDIT_PROVIDERS).then(|| v.to_owned());
    let both = ModelSettings::from_lookup_on(set("openai, gemini"), today).expect("both");
    assert_eq!(both.edit_providers, [Provider::OpenAi, Provider::Gemini]);
    assert!(both.uses(Provider::Gemini));
    for bad in ["openai,openai", "anthropic", "openai,"] {
        match ModelSettings::from_lookup_on(set(bad), today) {
            Err(ConfigError::Invalid { name, .. }) => assert_eq!(name, env::EDIT_PROVIDERS),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    let keyed = |k: &str| (k == env::GEMINI_API_KEY).then(|| "g-secret".to_owned());
    let keyed = ModelSettings::from_lookup_on(keyed, today).expect("keyed");
    assert_eq!(keyed.gemini_base_url, GEMINI_URL);
    assert!(!format!("{keyed:?}").contains("g-secret"));
}

#[test]
fn unknown_or_misplaced_models_are_refused_and_defaults_are_current() {
    let today = time::macros::date!(2026 - 12 - 01);
    let cases = [
        ("unknown", env::IMAGE_MODEL, "gpt-image-9"),
        ("a vision model for edits", env::IMAGE_MODEL, "gpt-5.4-mini"),
        (
            "an edit model for vision",
            env::VISION_MODEL,
            "gpt-image-2.5-flare",
        ),
        (
            "gpt-4.1-mini after its shutdown",
            env::VISION_MODEL,
            "gpt-4.1-mini",
        ),
    ];
    let later = time::macros::date!(2027 - 01 - 14);
    for (why, name, id) in cases {
        let get = |k: &str| (k == name).then(|| id.to_owned());
        let on = if id == "gpt-4.1-mini" { later } else { today };
        match ModelSettings::from_lookup_on(get, on) {
            Err(ConfigError::Invalid { name: n, .. }) => assert_eq!(n, name, "{why}"),
            other => panic!("{why}: {other:?}"),
        }
    }
    let defaults = ModelSettings::from_lookup_on(|_| None, today).expect("defaults");
    assert_eq!(defaults.image_model.id, catalogue::DEFAULT_IMAGE_MODEL);
    assert_eq!(defaults.vision_model.id, catalogue::DEFAULT_VISION_MODEL);
}
