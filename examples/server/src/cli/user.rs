//! `docmeta user create` and `docmeta user set-password`.

use std::io::{BufRead, Write};

use docmeta_core::UserUpdate;

use super::{AnyError, UserCommand, open};

pub(super) fn run(command: UserCommand) -> Result<(), AnyError> {
    match command {
        UserCommand::Create {
            data,
            username,
            superuser,
        } => {
            let db = open(&data, false)?;
            let password = password_input("password: ")?;
            let user = db.system().create_user(&username, &password, superuser)?;
            println!("created user '{}' (id {})", user.username, user.id);
        }
        UserCommand::SetPassword { data, username } => {
            let db = open(&data, false)?;
            let s = db.system();
            let user = s
                .users()?
                .into_iter()
                .find(|u| u.username == username)
                .ok_or_else(|| format!("no user '{username}'"))?;
            let password = password_input("new password: ")?;
            s.update_user(
                user.id,
                UserUpdate {
                    password: Some(password),
                    is_active: Some(true),
                    ..Default::default()
                },
            )?;
            println!("password of '{username}' changed");
        }
    }
    Ok(())
}

/// A password from DOCMETA_PASSWORD, or else a line of standard input after `prompt`.
fn password_input(prompt: &str) -> Result<String, AnyError> {
    if let Ok(p) = std::env::var("DOCMETA_PASSWORD") {
        return Ok(p);
    }
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}
