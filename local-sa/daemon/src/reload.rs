//! SIGHUP: the settings read again — the command line's config file, the
//! SM_Key file, ibacm's hosts file — and applied to the running daemon
//! without losing anything it holds: records, subscriptions, memberships,
//! transfers and connections stay. Settings fixed at start (ports,
//! sockets, directories) are named in the log when they changed.

use std::time::Instant;

use tracing::{error, info, warn};

use crate::driver::Driver;
use crate::endpoints;
use crate::options::Options;
use crate::settings::restart_needed;

impl Driver {
    /// Reads the settings again and applies what can change while
    /// running; a configuration with errors changes nothing.
    pub(crate) fn reload(&mut self, now: Instant) {
        info!("SIGHUP: reading the configuration again");
        let new = match Options::load(self.settings.args.clone()) {
            Ok(new) => new,
            Err(e) => {
                error!(error = %e, "the configuration has errors: nothing changed");
                self.notifier.status(&format!(
                    "SIGHUP: the configuration has errors, nothing changed: {e}"
                ));
                return;
            }
        };
        let names = match self.names_wanted.then(|| endpoints::names(&new)) {
            Some(Err(e)) => {
                error!(error = %e, "the ibacm hosts file has errors: nothing changed");
                return;
            }
            Some(Ok(names)) => Some(names),
            None => None,
        };
        let log_changed = match self.settings.log.set(new.log_level.as_deref()) {
            Ok(changed) => changed,
            Err(e) => {
                error!(error = %e, "the log level has errors: nothing changed");
                return;
            }
        };
        for p in &mut self.ports {
            p.core().reconfigure(now, new.agent_config());
        }
        self.account
            .borrow_mut()
            .set_connection_limits(new.max_connections, new.max_connections_per_user);
        if let Some(names) = names {
            for door in &mut self.doors {
                door.set_names(names.clone());
            }
        }
        for p in &mut self.ports {
            let ipoib = umad::ipoib::addresses(&p.facts);
            match endpoints::publication(&new, &self.owned_plan, &p.facts, &ipoib) {
                Ok(publication) => p.core().publish(now, publication),
                Err(e) => {
                    warn!(port = %p.facts, error = %e, "this port's directory record is unchanged")
                }
            }
        }
        let fixed = restart_needed(&self.settings.options, &new);
        if !fixed.is_empty() {
            warn!(
                settings = fixed.join(", "),
                "changed in the configuration, but take effect only when local-sa restarts"
            );
        }
        let limits = self.account.borrow().limits();
        info!(
            log_level = self.settings.log.current(),
            log_level_changed = log_changed,
            sm_key = if new.sm_key.is_some() { "set" } else { "none" },
            max_connections = limits.total,
            max_connections_per_user = limits.per_user,
            "configuration reloaded"
        );
        self.notifier.status("SIGHUP: configuration reloaded");
        self.settings.options = new;
    }
}
