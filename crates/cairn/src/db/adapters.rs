//! What the narrow views of the engine see: `DbInner`'s implementations of the traits through
//! which the closed WALs (`closed_wals.rs`) and ElasticBF's adjuster (`control/`) reach it, so
//! that neither imports `inner.rs`.

use super::inner::DbInner;
use super::live_files::LiveFile;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::sst::TableReader;
use crate::version::FileMeta;
use std::sync::Arc;

/// What syncing closed WALs needs of the engine.
impl super::closed_wals::Durability for DbInner {
    fn sync_dir(&self) -> Result<()> {
        self.fs.sync_dir(&self.dir)
    }

    fn set_poison(&self, e: &Error) {
        DbInner::set_poison(self, e);
    }

    fn check_poisoned(&self) -> Result<()> {
        self.life.check_poisoned()
    }

    fn record_sync(&self) {
        self.io.record_sync();
    }
}

/// What ElasticBF's adjuster sees of the engine.
impl super::control::elastic_adjuster::Host for DbInner {
    fn options(&self) -> &Options {
        &self.opts
    }

    fn logical_time(&self) -> u64 {
        self.counters.trees().iter().map(|t| t.gets()).sum()
    }

    fn lookups(&self) -> u64 {
        self.files.stats().lookups()
    }

    fn live_elastic(&self) -> Vec<super::control::elastic_adjuster::Live> {
        let mut out = Vec::new();
        self.for_each_live_file(|tree, meta, state| {
            if !state.elastic().is_empty() {
                out.push(super::control::elastic_adjuster::Live {
                    tree: tree as u32,
                    meta: meta.clone(),
                    state: state.clone(),
                });
            }
        });
        out
    }

    fn is_live(&self, number: u64) -> bool {
        self.super_versions().iter().any(|sv| {
            sv.version
                .trees
                .get(sv.tree)
                .is_some_and(|tv| tv.levels.iter().flatten().any(|f| f.number == number))
        })
    }

    fn open_table(&self, meta: &FileMeta, state: &Arc<LiveFile>) -> Result<Arc<TableReader>> {
        self.open_table_for(meta, Some(state))
    }

    fn filter_region(&self) -> &Arc<crate::memory::Region> {
        &self.memory.pinned_filters
    }
}
