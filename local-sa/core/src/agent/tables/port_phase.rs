//! When this port calls on the master for work every port of the fabric
//! does: at its own phase (from its GUID) within a window, so that the
//! fabric's ports spread over it ([`crate::pacing`] sizes the windows).

use std::time::Duration;

use crate::agent::SaCore;

impl SaCore {
    /// A fixed fraction of `window`, from this port's GUID: where in a
    /// window this port acts.
    pub(in crate::agent) fn spread(&self, window: Duration) -> Duration {
        window.mul_f64(self.phase())
    }

    /// This port's phase in 0..1, from its GUID: where in a window it
    /// calls on the master.
    pub(in crate::agent) fn phase(&self) -> f64 {
        let fraction = self.port.gid.guid().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54; // 0..1023
        fraction as f64 / 1024.0
    }

    /// How long this port waits before registering everything again with a
    /// new master.
    pub(in crate::agent) fn reregister_delay(&self) -> Duration {
        // The master's ClassPortInfo, the canary and this port's directory
        // record, besides what its consumers hold.
        let own =
            self.proxy.subscriptions.registry().filters() + self.proxy.memberships.groups() + 3;
        let window = self
            .config
            .pace
            .reregistration_window(self.tables.refresh.fabric_ports(), own);
        self.spread(window)
    }

    /// How long this port waits before refreshing its paths from a new
    /// master (meanwhile it serves what it holds).
    pub(in crate::agent) fn refresh_delay(&self) -> Duration {
        self.tables.refresh_delay(&self.upkeep_context())
    }

    /// How long this port waits to refresh again after its refresh
    /// failed `refresh_failures` times in a row ([`Backoff::after`]).
    ///
    /// [`Backoff::after`]: crate::agent::tables::refresh::Backoff::after
    pub(in crate::agent) fn refresh_retry_delay(&self) -> Duration {
        self.refresh_backoff().after(self.tables.refresh.failures())
    }
}
