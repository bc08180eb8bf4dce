//! oo7-client: a small oo7 (0.6) client for interop tests.
//!
//! Over D-Bus (the Secret Service's default collection):
//!   oo7-client store LABEL ATTR=VALUE... < secret     (replaces an item with the same attributes)
//!   oo7-client lookup ATTR=VALUE...                   (raw secret bytes to stdout; exit 1 if none)
//!   oo7-client clear ATTR=VALUE...                    (deletes every matching item)
//!   oo7-client search ATTR=VALUE...                   (one line per item: label, attributes, content type)
//! On a keyring file (libsecret's file backend format, v1), without D-Bus:
//!   oo7-client file-store PATH LABEL ATTR=VALUE... < secret
//!   oo7-client file-lookup PATH ATTR=VALUE...
//!   oo7-client file-clear PATH ATTR=VALUE...
//!   the file's password is $OO7_FILE_PASSWORD, else $SECRET_FILE_TEST_PASSWORD (libsecret's).
//! A secret is stored as text/plain when it is UTF-8 without NUL bytes, else as
//! application/octet-stream (as KeyringIdentity and secret-tool do); --blob or --text before the
//! command forces one. Exit codes: 0 done, 1 no such item, 2 usage, 3 failure.
use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::ExitCode;

use oo7::{ContentType, Secret};

fn usage() -> ExitCode {
    eprintln!(
        "usage: oo7-client [--blob|--text] store LABEL ATTR=VALUE... < secret\n       \
         oo7-client lookup|clear|search ATTR=VALUE...\n       \
         oo7-client [--blob|--text] file-store PATH LABEL ATTR=VALUE... < secret\n       \
         oo7-client file-lookup|file-clear PATH ATTR=VALUE..."
    );
    ExitCode::from(2)
}

fn attributes(args: &[String]) -> Option<HashMap<String, String>> {
    args.iter()
        .map(|a| a.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect()
}

fn read_secret(forced: Option<ContentType>) -> std::io::Result<Secret> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let text = !bytes.contains(&0) && std::str::from_utf8(&bytes).is_ok();
    let kind = forced.unwrap_or(if text { ContentType::Text } else { ContentType::Blob });
    Ok(Secret::with_content_type(kind, bytes))
}

fn write_secret(secret: &Secret) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(secret.as_bytes())?;
    out.flush()
}

fn file_password() -> Option<Secret> {
    std::env::var_os("OO7_FILE_PASSWORD")
        .or_else(|| std::env::var_os("SECRET_FILE_TEST_PASSWORD"))
        .map(|p| Secret::blob(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str())))
}

type Failure = Box<dyn std::error::Error>;

async fn run(mut args: Vec<String>) -> Result<ExitCode, Failure> {
    let mut forced = None;
    match args.first().map(String::as_str) {
        Some("--blob") => { forced = Some(ContentType::Blob); args.remove(0); }
        Some("--text") => { forced = Some(ContentType::Text); args.remove(0); }
        _ => {}
    }
    let Some(command) = args.first().cloned() else { return Ok(usage()) };
    let rest = &args[1..];
    match command.as_str() {
        "store" | "lookup" | "clear" | "search" => {
            let (label, attrs) = if command == "store" {
                let Some((label, attrs)) = rest.split_first() else { return Ok(usage()) };
                (label.clone(), attrs)
            } else {
                (String::new(), rest)
            };
            let Some(attrs) = attributes(attrs) else { return Ok(usage()) };
            let service = oo7::dbus::Service::new().await?;
            let collection = service.default_collection().await?;
            if collection.is_locked().await? {
                collection.unlock(None).await?;
            }
            match command.as_str() {
                "store" => {
                    let secret = read_secret(forced)?;
                    collection.create_item(&label, &attrs, secret, true, None).await?;
                    Ok(ExitCode::SUCCESS)
                }
                "lookup" => {
                    for item in collection.search_items(&attrs).await? {
                        if item.is_locked().await? {
                            item.unlock(None).await?;
                        }
                        write_secret(&item.secret().await?)?;
                        return Ok(ExitCode::SUCCESS);
                    }
                    Ok(ExitCode::from(1))
                }
                "clear" => {
                    let items = collection.search_items(&attrs).await?;
                    for item in &items {
                        item.delete(None).await?;
                    }
                    Ok(if items.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
                }
                _ => {
                    let items = collection.search_items(&attrs).await?;
                    for item in &items {
                        let mut a: Vec<_> = item.attributes().await?.into_iter().collect();
                        a.sort();
                        let kind = match item.secret().await {
                            Ok(s) => s.content_type().as_str().to_owned(),
                            Err(e) => format!("unreadable: {e}"),
                        };
                        println!("{}\t{}\t{:?}\t{}", item.path(), item.label().await?, a, kind);
                    }
                    Ok(if items.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
                }
            }
        }
        "file-store" | "file-lookup" | "file-clear" => {
            let Some((path, rest)) = rest.split_first() else { return Ok(usage()) };
            let (label, attrs) = if command == "file-store" {
                let Some((label, attrs)) = rest.split_first() else { return Ok(usage()) };
                (label.clone(), attrs)
            } else {
                (String::new(), rest)
            };
            let Some(attrs) = attributes(attrs) else { return Ok(usage()) };
            let Some(password) = file_password() else {
                eprintln!("oo7-client: set OO7_FILE_PASSWORD (or SECRET_FILE_TEST_PASSWORD)");
                return Ok(ExitCode::from(2));
            };
            let keyring = oo7::file::UnlockedKeyring::load(path, password).await?;
            match command.as_str() {
                "file-store" => {
                    let secret = read_secret(forced)?;
                    keyring.create_item(&label, &attrs, secret, true).await?;
                    Ok(ExitCode::SUCCESS)
                }
                "file-lookup" => match keyring.lookup_item(&attrs).await? {
                    Some(item) => {
                        write_secret(&item.as_unlocked().secret())?;
                        Ok(ExitCode::SUCCESS)
                    }
                    None => Ok(ExitCode::from(1)),
                },
                _ => {
                    let found = !keyring.search_items(&attrs).await?.is_empty();
                    keyring.delete(&attrs).await?;
                    Ok(if found { ExitCode::SUCCESS } else { ExitCode::from(1) })
                }
            }
        }
        _ => Ok(usage()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("oo7-client: {e}");
            ExitCode::from(3)
        }
    }
}
