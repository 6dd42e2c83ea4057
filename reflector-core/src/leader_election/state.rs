//! [`LeaderState`]: where one replica stands in an election.

/// Where this replica stands in its election, as [`LeaderElection::state`] reports
/// it and [`LeaderElection::transitions`] streams each change of it.
///
/// [`LeaderElection::state`]: super::LeaderElection::state
/// [`LeaderElection::transitions`]: super::LeaderElection::transitions
///
/// # Example
/// ```
/// use reflector::leader_election::LeaderState;
///
/// let state = LeaderState::Following { holder: Some("replica-b".into()) };
/// assert!(!state.is_leading());
/// assert_eq!(state.to_string(), "following replica-b");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderState {
    /// The election is not running: not started yet, or its `run` returned.
    Stopped,
    /// A candidate: another replica holds the lease (`holder`, as last read), or
    /// nobody does (`None`, or not read yet).
    Following {
        /// The `holderIdentity` of the lease as last read, if any.
        holder: Option<String>,
    },
    /// This replica holds the lease and renews it.
    Leading,
}

impl LeaderState {
    /// Whether this is [`LeaderState::Leading`].
    #[must_use]
    pub fn is_leading(&self) -> bool {
        matches!(self, LeaderState::Leading)
    }
}

impl std::fmt::Display for LeaderState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaderState::Stopped => f.write_str("stopped"),
            LeaderState::Following { holder: Some(h) } => write!(f, "following {h}"),
            LeaderState::Following { holder: None } => f.write_str("following (no holder)"),
            LeaderState::Leading => f.write_str("leading"),
        }
    }
}
