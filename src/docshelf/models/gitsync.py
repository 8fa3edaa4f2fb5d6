import sqlalchemy as sa

from docshelf.kit.db import metadata

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
