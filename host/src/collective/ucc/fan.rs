//! fanin and fanout: an agreement on the root, a quiet, a sync.

use super::*;

impl Runtime {
    pub(crate) fn fanin(&self, team: Team, root: u32) -> Result<()> {
        self.fan(team, "fanin", root)
    }

    pub(crate) fn fanout(&self, team: Team, root: u32) -> Result<()> {
        self.fan(team, "fanout", root)
    }

    pub(super) fn fan(&self, team: Team, what: &str, root: u32) -> Result<()> {
        let m = self.members(team)?;
        let local = check_root(what, root, m.shape.size);
        let args = UccArgs {
            what,
            common: vec![u64::from(root)],
            own: Vec::new(),
            part: None,
            local: Some(local),
        };
        let moves = |rt: &Runtime, m: &Members, _: &Shared| {
            // Complete with the sync, no closing meeting.
            let synced = rt.quiet().and_then(|()| rt.sync_members(m, what));
            Ran::Complete(synced.map_err(|e| e.during(what)))
        };
        self.run_call(&m, Ucc { args, moves })
    }
}
