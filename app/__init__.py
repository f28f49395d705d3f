"""Streamlit-side code: the entry point, shared UI pieces and figure builders."""
