"""Persistence: SQLAlchemy tables, Alembic migrations, repositories; SQLite or PostgreSQL."""
