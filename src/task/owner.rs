//! Who is asking: every owner's read and write is filtered by app, and by scope for a
//! scope token, so another owner's task is simply not found.

/// Who is asking: an app, optionally narrowed to one scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub app: String,
    pub scope_id: Option<String>,
}

impl Owner {
    pub fn app(app: impl Into<String>) -> Self {
        Owner {
            app: app.into(),
            scope_id: None,
        }
    }
}
