//! [`GraphImage`]: the native HNSW graph as plain data, for snapshots.
//!
//! Nodes are numbered `0..n` by whoever exports the graph (the snapshot numbers them by record
//! order, which survives a reload, where engine slots do not). An image read from a snapshot is
//! untrusted input: [`GraphImage::validate`] checks every field before a graph adopts it.

/// The graph's shape: per node its level and its neighbour lists, plus the entry point and the
/// state of the level generator (so inserting after a reload draws the same levels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GraphImage {
    /// State of the level generator.
    pub(crate) rng: u64,
    /// The entry node, or `None` for an empty graph.
    pub(crate) entry: Option<u32>,
    /// Level of each node.
    pub(crate) levels: Vec<u8>,
    /// Per node in order, per level from 0 to its level: a count, then that many neighbours.
    pub(crate) links: Vec<u32>,
}

impl GraphImage {
    /// Number of nodes.
    pub(crate) fn nodes(&self) -> usize {
        self.levels.len()
    }

    /// Each node's lists, in node order: `(node, level, neighbours)` for every level of every
    /// node. Only meaningful on a validated image.
    pub(crate) fn lists(&self) -> impl Iterator<Item = (u32, u8, &[u32])> + '_ {
        let mut at = 0usize;
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(node, &level)| (0..=level).map(move |l| (node as u32, l)))
            .map(move |(node, l)| {
                let count = self.links[at] as usize;
                let list = &self.links[at + 1..at + 1 + count];
                at += 1 + count;
                (node, l, list)
            })
    }

    /// Checks the image against the graph parameters: levels at most `max_level`, lists no
    /// longer than `m0` (base layer) or `m` (above), every neighbour a node present at that
    /// level, no self-links or repeats, the entry point on the top level, and no words left
    /// over. The message names the first problem found.
    pub(crate) fn validate(&self, m: usize, m0: usize, max_level: u8) -> Result<(), String> {
        let n = self.nodes();
        if let Some((node, &level)) = self
            .levels
            .iter()
            .enumerate()
            .find(|(_, l)| **l > max_level)
        {
            return Err(format!(
                "node {node} has level {level}, expected at most {max_level}"
            ));
        }
        let top = self.levels.iter().copied().max();
        match (self.entry, top) {
            (None, None) => {}
            (Some(e), Some(top)) => match self.levels.get(e as usize) {
                Some(&l) if l == top => {}
                Some(&l) => {
                    return Err(format!(
                        "entry node {e} is on level {l}, expected the top level {top}"
                    ));
                }
                None => return Err(format!("entry node {e} is not among the {n} nodes")),
            },
            (None, Some(_)) => return Err(format!("no entry node for {n} nodes")),
            (Some(e), None) => return Err(format!("entry node {e} in an empty graph")),
        }
        let mut at = 0usize;
        for (node, &level) in self.levels.iter().enumerate() {
            for l in 0..=level {
                let cap = if l == 0 { m0 } else { m };
                let Some(&count) = self.links.get(at) else {
                    return Err(format!("links end at node {node} level {l}"));
                };
                let count = count as usize;
                if count > cap {
                    return Err(format!(
                        "node {node} has {count} neighbours on level {l}, expected at most {cap}"
                    ));
                }
                let Some(list) = self.links.get(at + 1..at + 1 + count) else {
                    return Err(format!("links end inside node {node} level {l}"));
                };
                for (i, &nb) in list.iter().enumerate() {
                    match self.levels.get(nb as usize) {
                        None => {
                            return Err(format!(
                                "node {node} links to {nb}, expected a node below {n}"
                            ));
                        }
                        Some(&nl) if nl < l => {
                            return Err(format!(
                                "node {node} links to {nb} on level {l}, which only reaches level {nl}"
                            ));
                        }
                        _ => {}
                    }
                    if nb as usize == node || list[..i].contains(&nb) {
                        return Err(format!(
                            "node {node} lists {nb} twice or itself on level {l}"
                        ));
                    }
                }
                at += 1 + count;
            }
        }
        if at != self.links.len() {
            return Err(format!(
                "{} link words left after the last node",
                self.links.len() - at
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three nodes: 0 and 1 on level 1, 2 on level 0; entry 1.
    fn small() -> GraphImage {
        GraphImage {
            rng: 7,
            entry: Some(1),
            levels: vec![1, 1, 0],
            #[rustfmt::skip]
            links: vec![
                2, 1, 2,   1, 1, // node 0: level 0 -> [1, 2], level 1 -> [1]
                1, 0,      1, 0, // node 1: level 0 -> [0],    level 1 -> [0]
                1, 0,            // node 2: level 0 -> [0]
            ],
        }
    }

    #[test]
    fn a_well_formed_image_passes_and_lists_read_back() {
        let g = small();
        assert_eq!(g.validate(1, 2, 15), Ok(()));
        let lists: Vec<(u32, u8, Vec<u32>)> =
            g.lists().map(|(n, l, v)| (n, l, v.to_vec())).collect();
        assert_eq!(
            lists,
            vec![
                (0, 0, vec![1, 2]),
                (0, 1, vec![1]),
                (1, 0, vec![0]),
                (1, 1, vec![0]),
                (2, 0, vec![0]),
            ]
        );
    }

    #[test]
    fn every_kind_of_damage_is_named() {
        type Damage = Box<dyn Fn(&mut GraphImage)>;
        let cases: Vec<(&str, Damage)> = vec![
            ("expected at most 15", Box::new(|g| g.levels[2] = 16)),
            ("expected the top level", Box::new(|g| g.entry = Some(2))),
            ("not among the 3 nodes", Box::new(|g| g.entry = Some(9))),
            ("no entry node", Box::new(|g| g.entry = None)),
            ("expected at most 2", Box::new(|g| g.links[0] = 3)),
            ("expected a node below 3", Box::new(|g| g.links[1] = 3)),
            ("only reaches level 0", Box::new(|g| g.links[4] = 2)),
            ("twice or itself", Box::new(|g| g.links[2] = 1)),
            ("twice or itself", Box::new(|g| g.links[6] = 1)),
            ("left after the last node", Box::new(|g| g.links.push(0))),
            ("links end", Box::new(|g| g.links.truncate(10))),
            ("links end", Box::new(|g| g.links.truncate(9))),
        ];
        for (want, damage) in cases {
            let mut g = small();
            damage(&mut g);
            let err = g.validate(1, 2, 15).expect_err(want);
            assert!(err.contains(want), "{err:?} should say {want:?}");
        }
    }
}
