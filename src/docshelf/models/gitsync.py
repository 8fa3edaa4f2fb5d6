import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

# Git Sync (gitsync/): what a revision made by a git push keeps of the commit pushed, so the
# commit the space serves for that revision is the very commit the writer pushed (same author,
# committer, times and message: the same id when the tree is the same).
git_commits = sa.Table(
    "git_commits",
    metadata,
    sa.Column(
        "revision_id",
        sa.String(32),
        sa.ForeignKey("revisions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("author", sa.LargeBinary(), nullable=False),
    sa.Column("author_time", sa.BigInteger(), nullable=False),
    sa.Column("author_timezone", sa.Integer(), nullable=False),
    sa.Column("committer", sa.LargeBinary(), nullable=False),
    sa.Column("commit_time", sa.BigInteger(), nullable=False),
    sa.Column("commit_timezone", sa.Integer(), nullable=False),
    sa.Column("message", sa.LargeBinary(), nullable=False),
    # Set when the files pushed were not exactly the space's own (a page without its id, a
    # link the engine rewrote): the revision's commit is then one more commit on top of the
    # one pushed (its id here, its objects in git_objects), so the writer's history goes on.
    sa.Column("pushed", sa.String(40)),
)

# The objects of pushes kept for the commits above (immutable, by id).
git_objects = sa.Table(
    "git_objects",
    metadata,
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("sha", sa.String(40), primary_key=True),
    sa.Column("type_num", sa.Integer(), nullable=False),
    sa.Column("data", sa.LargeBinary(), nullable=False),
)

# The branch a change request was opened from by a push (others are `change-requests/<n>`).
git_branches = sa.Table(
    "git_branches",
    metadata,
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column(
        "change_request_id",
        sa.String(32),
        sa.ForeignKey("change_requests.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
)

# A space's link to an outside git repository (gitsync/remote.py): main is pushed to `branch`
# of `url` after each change and the branch pulled on a schedule or on demand, as the member
# who linked it (`user_id`). `remote_commit` is the branch's commit as last seen by a sync,
# `pulled` the last one applied from it (so a pull under merge rules opens one change request).
git_remotes = sa.Table(
    "git_remotes",
    metadata,
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("branch", sa.String(255), nullable=False),
    sa.Column("username", sa.Text()),
    sa.Column("token", sa.Text()),
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    # The last part of the link's webhook URL (`/git/hooks/<space>/<secret>`): a push to the
    # remote can ask for a pull without an API token (git hosts' webhooks send none).
    sa.Column("hook_secret", sa.String(64), nullable=False),
    sa.Column("remote_commit", sa.String(40)),
    sa.Column("pulled", sa.String(40)),
    sa.Column("last_push_at", UTCDateTime()),
    sa.Column("last_pull_at", UTCDateTime()),
    sa.Column("last_sync_at", UTCDateTime()),
    sa.Column("last_error", sa.Text()),
    sa.Column("last_error_at", UTCDateTime()),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
)
